package keys

import "fmt"

// EntryError is the error of one entry of a list of configurations, as a
// keyring's AddAll returns it: Kind is "ao" or "md5", Index the entry's
// place in the list, Name its name when the caller gave one.
type EntryError struct {
	Kind  string
	Index int
	Name  string
	Err   error
}

// Error is the entry's label (see [Label]), then Err: ao[3] ("r1"): ….
func (e *EntryError) Error() string { return Label(e.Kind, e.Index, e.Name) + ": " + e.Err.Error() }

// Unwrap returns Err, so errors.Is finds the keyring's sentinel.
func (e *EntryError) Unwrap() error { return e.Err }

// Label is how messages name entry i of kind ("ao" or "md5"): ao[3], or
// ao[3] ("name") when it has a name (keyfile's messages use it too).
func Label(kind string, i int, name string) string {
	if name == "" {
		return fmt.Sprintf("%s[%d]", kind, i)
	}
	return fmt.Sprintf("%s[%d] (%q)", kind, i, name)
}
