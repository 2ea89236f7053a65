package rfbtest

import (
	"bytes"
	"testing"
)

func TestKeyReversesTheBitsOfTheFirstEightBytes(t *testing.T) {
	for _, tc := range []struct {
		password string
		want     []byte
	}{
		{"", []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		// 'a' = 0110 0001 -> 1000 0110; '1' = 0011 0001 -> 1000 1100
		{"a1", []byte{0x86, 0x8c, 0, 0, 0, 0, 0, 0}},
		{"\x01\x02\x04\x08\x10\x20\x40\x80", []byte{0x80, 0x40, 0x20, 0x10, 0x08, 0x04, 0x02, 0x01}},
		// RFB uses the first 8 characters; the rest make no difference.
		{"ABCDEFGHxyz", Key("ABCDEFGH")},
	} {
		if got := Key(tc.password); !bytes.Equal(got, tc.want) {
			t.Errorf("Key(%q) = %x, want %x", tc.password, got, tc.want)
		}
	}
}
