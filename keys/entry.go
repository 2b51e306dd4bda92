package keys

import (
	"errors"
	"fmt"
)

// ErrNoCause is what an [EntryError] without an Err (a zero one, or a nil
// *EntryError) unwraps to: it names an entry but not what was wrong.
var ErrNoCause = errors.New("keys: entry error without a cause")

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
// An EntryError without Kind is labelled entry[i], one without Err says
// [ErrNoCause], and a nil *EntryError says so.
func (e *EntryError) Error() string {
	if e == nil {
		return "keys: nil *EntryError"
	}
	kind := e.Kind
	if kind == "" {
		kind = "entry"
	}
	return Label(kind, e.Index, e.Name) + ": " + e.Unwrap().Error()
}

// Unwrap returns Err, so errors.Is finds the keyring's sentinel;
// [ErrNoCause] when there is none (a zero or nil *EntryError).
func (e *EntryError) Unwrap() error {
	if e == nil || e.Err == nil {
		return ErrNoCause
	}
	return e.Err
}

// NameAt is names[i], or "" when names has none: the name of entry i of
// a list whose names are given beside it (AddAll's).
func NameAt(names []string, i int) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return ""
}

// Label is how messages name entry i of kind ("ao" or "md5"): ao[3], or
// ao[3] ("name") when it has a name (keyfile's messages use it too).
func Label(kind string, i int, name string) string {
	if name == "" {
		return fmt.Sprintf("%s[%d]", kind, i)
	}
	return fmt.Sprintf("%s[%d] (%q)", kind, i, name)
}
