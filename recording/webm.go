package recording

import (
	"encoding/binary"
	"io"
	"math"
	"math/bits"
)

// The recorder writes WebM (Matroska) to a pipe, where ffmpeg cannot go
// back to write the Duration at the end: it writes the one it was told
// (-t, the longest a recording may last, resources/docker/recorder/
// record.sh) as a placeholder. scanner follows the stream as it goes to
// the file, remembers where that Duration's bytes are and the time of the
// last frame, so that the end of a recording can write the real duration
// in place (8 bytes, no copy of the file), and knows it even when the
// recording ended by itself.
//
// It reads only what it needs: it enters Segment, Info, Cluster and
// BlockGroup, and skips every other element by its size. Element IDs
// keep their length marker, as Matroska's specification writes them.
const (
	idSegment       = 0x18538067
	idInfo          = 0x1549A966
	idTimecodeScale = 0x2AD7B1
	idDuration      = 0x4489
	idCluster       = 0x1F43B675
	idTimecode      = 0xE7
	idBlockGroup    = 0xA0
	idBlock         = 0xA1
	idSimpleBlock   = 0xA3
)

// maxHeader is an element's ID (4 bytes at most) and size (8).
const maxHeader = 12

type scanner struct {
	off  int64  // the stream offset of buf[0]
	buf  []byte // bytes not yet parsed: at most a header and a few bytes
	skip int64  // bytes of the current element still to pass over
	bad  bool   // the stream is not what it should be: stop reading it

	scale      int64 // nanoseconds per tick (TimecodeScale)
	cluster    int64 // the current cluster's time, in ticks
	last       int64 // the latest frame's time, in ticks
	frames     int64
	durationAt int64 // the offset of Duration's float, or -1
	durationSz int
}

func newScanner() *scanner { return &scanner{scale: 1_000_000, durationAt: -1} }

// Write follows p, the next bytes of the stream; it never fails.
func (s *scanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !s.bad {
		if s.skip > 0 {
			k := int(min(s.skip, int64(len(p))))
			s.skip -= int64(k)
			s.off += int64(k)
			p = p[k:]
			continue
		}
		take := min(len(p), maxHeader+8-len(s.buf))
		s.buf = append(s.buf, p[:take]...)
		p = p[take:]
		s.parse()
	}
	return n, nil
}

// parse reads the elements whose heads are whole in buf, leaving the rest.
func (s *scanner) parse() {
	for len(s.buf) > 0 && s.skip == 0 && !s.bad {
		used, ok := s.element(s.buf)
		if !ok {
			if len(s.buf) >= maxHeader+8 {
				s.bad = true
			}
			return
		}
		s.off += int64(used)
		s.buf = s.buf[used:]
		if s.skip > 0 {
			k := int(min(s.skip, int64(len(s.buf))))
			s.skip -= int64(k)
			s.off += int64(k)
			s.buf = s.buf[k:]
		}
	}
	s.buf = append([]byte(nil), s.buf...)
}

// element reads the element at the start of b: how many bytes it used
// (its head, and what it read of its data), with skip set to the rest of
// its data; ok false when b does not hold enough yet.
func (s *scanner) element(b []byte) (used int, ok bool) {
	id, idLen, ok := vint(b, true)
	if !ok {
		return 0, false
	}
	size, sizeLen, ok := vint(b[idLen:], false)
	if !ok {
		return 0, false
	}
	head := idLen + sizeLen
	unknown := size < 0
	switch id {
	case idSegment, idInfo, idCluster, idBlockGroup:
		return head, true
	case idTimecodeScale, idTimecode:
		v, ok := s.uint(b[head:], size)
		if !ok {
			return 0, false
		}
		if id == idTimecode {
			s.cluster = v
		} else if v > 0 {
			s.scale = v
		}
		return head + int(size), true
	case idDuration:
		if size != 4 && size != 8 {
			s.bad = true
			return 0, false
		}
		s.durationAt, s.durationSz = s.off+int64(head), int(size)
	case idSimpleBlock, idBlock:
		if len(b) < head+4 {
			return 0, false
		}
		if b[head]&0x80 == 0 || unknown || size < 4 { // a track number of more than one byte: not ffmpeg's
			s.bad = true
			return 0, false
		}
		rel := int64(int16(binary.BigEndian.Uint16(b[head+1:])))
		s.last = max(s.last, s.cluster+rel)
		s.frames++
		s.skip = size - 3
		return head + 3, true
	}
	if unknown {
		s.bad = true
		return 0, false
	}
	s.skip = size
	return head, true
}

// uint reads an unsigned integer of size bytes (at most 8).
func (s *scanner) uint(b []byte, size int64) (int64, bool) {
	if size < 0 || size > 8 {
		s.bad = true
		return 0, false
	}
	if int64(len(b)) < size {
		return 0, false
	}
	var v int64
	for _, c := range b[:size] {
		v = v<<8 | int64(c)
	}
	return v, true
}

// vint reads an EBML variable-length integer: an ID keeps its marker; a
// size drops it, and -1 is "unknown" (all value bits set).
func vint(b []byte, keepMarker bool) (v int64, n int, ok bool) {
	if len(b) == 0 || b[0] == 0 {
		// A zero first byte is no EBML integer: parse gives up on the
		// stream once its buffer fills without an element.
		return 0, 0, false
	}
	n = bits.LeadingZeros8(b[0]) + 1
	if len(b) < n {
		return 0, 0, false
	}
	v = int64(b[0])
	allOnes := false
	if !keepMarker {
		v &= int64(0xFF >> n)
		allOnes = v == int64(0xFF>>n)
	}
	for _, c := range b[1:n] {
		v = v<<8 | int64(c)
		allOnes = allOnes && c == 0xFF
	}
	if allOnes {
		return -1, n, true
	}
	return v, n, true
}

// durationMs is the recording's length so far: up to the end of its last
// frame (one frame at fps lasts 1000/fps ms).
func (s *scanner) durationMs(fps int) int64 {
	if s.frames == 0 {
		return 0
	}
	return s.last*s.scale/1_000_000 + int64(1000/max(fps, 1))
}

// writeDuration writes the duration into the file's Duration, in the
// segment's ticks; it does nothing when the stream had none.
func (s *scanner) writeDuration(f io.WriterAt, ms int64) error {
	if s.durationAt < 0 {
		return nil
	}
	ticks := float64(ms) * 1_000_000 / float64(s.scale)
	b := make([]byte, s.durationSz)
	if s.durationSz == 8 {
		binary.BigEndian.PutUint64(b, math.Float64bits(ticks))
	} else {
		binary.BigEndian.PutUint32(b, math.Float32bits(float32(ticks)))
	}
	_, err := f.WriteAt(b, s.durationAt)
	return err
}
