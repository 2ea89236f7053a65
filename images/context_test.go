package images

import (
	"bytes"
	"testing"
	"testing/fstest"
)

func TestBuildHashFollowsFilesAndArgs(t *testing.T) {
	base := fstest.MapFS{"Dockerfile": {Data: []byte("FROM x")}, "entrypoint.sh": {Data: []byte("#!/bin/sh")}}
	changed := fstest.MapFS{"Dockerfile": {Data: []byte("FROM y")}, "entrypoint.sh": {Data: []byte("#!/bin/sh")}}
	a, _ := newBuildContext(base, nil)
	again, _ := newBuildContext(base, nil)
	b, _ := newBuildContext(changed, nil)
	c, _ := newBuildContext(base, map[string]string{"BASE_IMAGE": "debian:local"})
	if a.Hash != again.Hash {
		t.Error("hash is not deterministic")
	}
	if a.Hash == b.Hash || a.Hash == c.Hash || b.Hash == c.Hash {
		t.Errorf("hashes collide: %s %s %s", a.Hash, b.Hash, c.Hash)
	}
}

func TestStepProgress(t *testing.T) {
	var got []string
	s := newStepProgress(func(msg string, cur, total int) {
		got = append(got, msg+"|"+string(rune('0'+cur))+"/"+string(rune('0'+total)))
	})
	s.line("Step 2/9 : RUN apt-get update")
	s.line("Get:1 http://deb.debian.org bookworm InRelease") // within a second of the step: skipped
	if len(got) != 1 || got[0] != "Step 2/9: RUN apt-get update|2/9" {
		t.Errorf("progress = %q", got)
	}
}

func TestOnCoversTheParentsHash(t *testing.T) {
	c := buildContext{Hash: "child"}
	if c.on("a").Hash == c.on("b").Hash {
		t.Fatal("a change of the image below does not change the hash")
	}
	if c.on("a").Hash != c.on("a").Hash || c.on("a").Hash == c.Hash {
		t.Fatal("On is not a stable hash of both")
	}
}

func TestExtraFilesJoinTheContext(t *testing.T) {
	base := fstest.MapFS{"Dockerfile": {Data: []byte("FROM x")}}
	plain, _ := newBuildContext(base, nil)
	with, err := newBuildContextWith(base, map[string][]byte{"ca/00.crt": []byte("cert")}, nil)
	if err != nil || with.Hash == plain.Hash {
		t.Fatalf("an extra file: hash %s (without it %s), %v", with.Hash, plain.Hash, err)
	}
	same, _ := newBuildContext(fstest.MapFS{"Dockerfile": {Data: []byte("FROM x")}, "ca/00.crt": {Data: []byte("cert")}}, nil)
	if same.Hash != with.Hash || !bytes.Equal(same.Tar, with.Tar) {
		t.Error("an extra file packs differently from the same file in the files")
	}
	for _, path := range []string{"Dockerfile", "../escape", "/abs", "a//b"} {
		if _, err := newBuildContextWith(base, map[string][]byte{path: []byte("x")}, nil); err == nil {
			t.Errorf("extra file %q: no error", path)
		}
	}
}
