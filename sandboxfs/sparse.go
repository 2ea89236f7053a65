package sandboxfs

import (
	"io"
	"os"

	units "github.com/docker/go-units"
)

// A file in the sandbox can be sparse (truncate -s 1G: a gigabyte that
// takes no disk), and the engine's archive carries its holes as zeros:
// the archive/tar reader gives them as zeros too. Written as they come,
// 1 GiB of nothing became 1 GiB of the host's disk. So a download writes
// only the blocks that hold data and seeks over blocks of zeros, which the
// host's file system keeps as holes, and counts what it writes against
// the room the destination has (room).

// holeBlock is the unit a run of zeros is skipped in: a file system's
// block, so that what is skipped is what a hole saves.
const holeBlock = 4 << 10

// sparseChunk is how much is read before it is written: small, so that the
// engine goes on sending while a piece is written (reading a whole MiB
// first made a 100 MB download 40% slower).
const sparseChunk = 64 << 10

// room is what a download may still write to the host's disk: the
// destination's free space when it started, less a reserve of a tenth of
// it (at most 1 GiB), so that a download from a hostile sandbox cannot
// fill the user's disk.
type room struct {
	left int64
	free int64 // what the file system had free, for the refusal
}

// newRoom measures the file system of dir.
func newRoom(dir string) (*room, error) {
	free, err := freeSpace(dir)
	if err != nil {
		return nil, refuse("hostPath", "cannot tell the free space of %s: %v", dir, err)
	}
	return &room{left: free - min(1<<30, free/10), free: free}, nil
}

// take counts n bytes written, refusing what does not fit.
func (r *room) take(n int64) error {
	if r.left -= n; r.left < 0 {
		return refuse("hostPath", "the download needs more than the %s free on the destination's file system, "+
			"less a reserve of a tenth (at most 1 GiB); nothing was written", size(r.free))
	}
	return nil
}

// writeSparse copies the size bytes of r to out, a new empty file,
// writing the blocks that hold data where they belong and leaving holes
// for blocks of zeros; the file ends at size whatever its last block.
// buf's length is a multiple of holeBlock. It returns the bytes copied.
func writeSparse(out *os.File, r io.Reader, size int64, buf []byte, space *room) (int64, error) {
	var off int64
	buf = buf[:min(len(buf), sparseChunk)]
	for off < size {
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), size-off)])
		if err := writeBlocks(out, buf[:n], off, space); err != nil {
			return off, err
		}
		off += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return off, io.ErrUnexpectedEOF // the archive ended early
		}
		if err != nil {
			return off, err
		}
	}
	return off, out.Truncate(size)
}

// writeBlocks writes data (at file offset off) block by block, skipping
// the blocks of zeros and joining the others into as few writes as it
// can.
func writeBlocks(out *os.File, data []byte, off int64, space *room) error {
	start := -1 // the first block of the run of data being gathered
	flush := func(end int) error {
		if start < 0 {
			return nil
		}
		run := data[start:end]
		start = -1
		if err := space.take(int64(len(run))); err != nil {
			return err
		}
		_, err := out.WriteAt(run, off+int64(end-len(run)))
		return err
	}
	for i := 0; i < len(data); i += holeBlock {
		end := min(i+holeBlock, len(data))
		if allZero(data[i:end]) {
			if err := flush(i); err != nil {
				return err
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return flush(len(data))
}

// allZero says whether b holds only zero bytes.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func size(n int64) string { return units.BytesSize(float64(n)) }
