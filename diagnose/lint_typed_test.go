package diagnose

import "testing"

// TestKeyFindingsTyped: whitespace at a key's end is a finding for a key
// that reads as typed text, not for random bytes that happen to end in a
// space (keys gen's hex: keys: TestKeysGen failed about once in twelve
// runs before).
func TestKeyFindingsTyped(t *testing.T) {
	if f := keyFindings("ao[0]", []byte("s3cret\n")); len(f) != 1 {
		t.Errorf("a typed key with a newline: %d findings, want 1", len(f))
	}
	random := []byte{0x9f, 0x03, 0xc4, 0x7a, 0x11, 0xe0, 0x5b, 0x20}
	if f := keyFindings("ao[0]", random); len(f) != 0 {
		t.Errorf("random bytes ending in 0x20: %v, want no finding", f)
	}
}
