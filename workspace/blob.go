package workspace

import (
	"crypto/sha1"
	"encoding/hex"
	"hash"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// Content is identified as git identifies it: a file's blob id is the
// SHA-1 of "blob SIZE\0" and its bytes, a link's that of its target. So
// the host's hash of a file and the id git gives it in /workspace are one
// number, and a task's commit says, for each file it changed, the id of
// the content the task started from: apply compares that with the host's
// file as it is now.

// stamp is what lstat says of a file that changes when its content does:
// a file whose stamp is unchanged is not read again.
type stamp struct {
	size         int64
	mtime, ctime int64 // nanoseconds; ctime 0 where the system has none
	ino          uint64
	mode         fs.FileMode // type and permission bits
}

func stampOf(info fs.FileInfo) stamp {
	s := stamp{size: info.Size(), mtime: info.ModTime().UnixNano(), mode: info.Mode() & (fs.ModeType | fs.ModePerm)}
	s.ctime, s.ino = sysStamp(info)
	return s
}

// sameKind says two stamps are of one kind of file with one executable
// bit: git keeps nothing else of a mode.
func sameKind(a, b fs.FileMode) bool {
	return a.Type() == b.Type() && (a&0o100 != 0) == (b&0o100 != 0)
}

// blobHash starts the blob id of size bytes.
func blobHash(size int64) hash.Hash {
	h := sha1.New()
	io.WriteString(h, "blob "+strconv.FormatInt(size, 10)+"\x00")
	return h
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// blobOf is the blob id of the file or link at file, as it is now: its
// first size bytes (a file that grew since its lstat is hashed as it was
// then; one that shrank is an error).
func blobOf(file string, info fs.FileInfo) (string, error) {
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(file)
		if err != nil {
			return "", err
		}
		return linkBlob(target), nil
	}
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return readerBlob(f, info.Size())
}

// readerBlob is the blob id of the first size bytes of r, which must have
// them.
func readerBlob(r io.Reader, size int64) (string, error) {
	h := blobHash(size)
	n, err := io.Copy(h, io.LimitReader(r, size))
	if err != nil {
		return "", err
	}
	if n < size {
		return "", errShrank
	}
	return hexSum(h), nil
}

func linkBlob(target string) string {
	h := blobHash(int64(len(target)))
	io.WriteString(h, target)
	return hexSum(h)
}
