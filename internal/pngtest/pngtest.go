// Package pngtest writes PNG files byte by byte for tests: the forms a
// desktop agent sends (a filter byte "none" a row) and forged ones that
// no encoder would make.
package pngtest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// File is a PNG of width x height pixels with the header's bitDepth and
// colorType, idat its IDAT chunk's data (zlib-compressed rows, each
// starting with its filter byte), made whatever idat holds.
func File(width, height int, bitDepth, colorType byte, idat []byte) []byte {
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(kind string, data []byte) {
		binary.Write(&out, binary.BigEndian, uint32(len(data)))
		out.WriteString(kind)
		out.Write(data)
		binary.Write(&out, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(kind), data...)))
	}
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(width)), uint32(height))
	chunk("IHDR", append(ihdr, bitDepth, colorType, 0, 0, 0))
	chunk("IDAT", idat)
	chunk("IEND", nil)
	return out.Bytes()
}
