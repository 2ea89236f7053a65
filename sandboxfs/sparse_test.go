//go:build unix

package sandboxfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteSparseKeepsHoles: blocks of zeros become holes, data lands
// where it was, the file ends at its size (a trailing run of zeros too),
// and only the data counts against the room.
func TestWriteSparseKeepsHoles(t *testing.T) {
	const size = 64 << 20
	content := make([]byte, size)
	copy(content[5<<20:], "data in the middle")
	copy(content[size-holeBlock-3:], "end") // then a block of zeros
	copy(content[7:], "start, not on a block boundary")
	out, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	space := &room{left: 1 << 20, free: 1 << 20}
	n, err := writeSparse(out, bytes.NewReader(content), size, make([]byte, copyBuffer), space)
	if err != nil || n != size {
		t.Fatalf("wrote %d, %v", n, err)
	}
	got, _ := os.ReadFile(out.Name())
	if !bytes.Equal(got, content) {
		t.Fatal("the file is not the content")
	}
	if used := 1<<20 - space.left; used != 3*holeBlock {
		t.Errorf("counted %d bytes against the room, want the 3 blocks with data", used)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(out.Name(), &st); err != nil {
		t.Fatal(err)
	}
	if disk := st.Blocks * 512; disk > 1<<20 {
		t.Errorf("the 64 MiB file with 3 blocks of data takes %d bytes of disk", disk)
	}
}

// TestWriteSparseRefusesPastTheRoom: data past the room is refused
// (naming hostPath); an archive that ends early is an error.
func TestWriteSparseRefusesPastTheRoom(t *testing.T) {
	out, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	data := bytes.Repeat([]byte{1}, 4<<20)
	_, err = writeSparse(out, bytes.NewReader(data), int64(len(data)), make([]byte, copyBuffer), &room{left: 3 << 20, free: 3 << 20})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "hostPath" {
		t.Errorf("4 MiB into 3 MiB of room: %v", err)
	}
	_, err = writeSparse(out, bytes.NewReader(data[:100]), 200, make([]byte, copyBuffer), &room{left: 1 << 30})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("an archive that ends early: %v", err)
	}
}
