package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// sandboxPrefix marks the sandbox's side of a cp, as docker cp's
// CONTAINER: does.
const sandboxPrefix = "sandbox:"

const cpUsage = "usage: pilot-sandbox cp [--project DIR] [--overwrite] SRC DEST\n" +
	"  one of SRC and DEST is sandbox:PATH (absolute, or relative to /home/sandbox)"

// runCp copies a file or a tree into or out of the project's sandbox,
// running or stopped, in the spirit of docker cp: a destination that is
// an existing directory receives the source under its own name.
func runCp(ctx context.Context, e *env, args []string) error {
	var overwrite bool
	c, fs, err := newCLI(e, "cp", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&overwrite, "overwrite", false, "replace files that exist on the host (a copy into the sandbox always replaces)")
	})
	if err != nil {
		return err
	}
	defer c.close()
	if fs.NArg() != 2 || strings.HasPrefix(fs.Arg(0), sandboxPrefix) == strings.HasPrefix(fs.Arg(1), sandboxPrefix) {
		fmt.Fprintln(e.stderr, cpUsage)
		return errUsage
	}
	files, err := c.manager.Files(ctx, c.project)
	if err != nil {
		return err
	}
	stopProgress := c.showProgress()
	src, dest, done, err := copyFiles(ctx, files, fs.Arg(0), fs.Arg(1), overwrite)
	stopProgress()
	if err != nil {
		return err
	}
	if c.json {
		c.printJSON(done)
		return nil
	}
	fmt.Fprintf(e.stdout, "Copied %s to %s: %d files, %.1f MB.\n", src, dest, done.Files, float64(done.Bytes)/1e6)
	return nil
}

// copyFiles copies one way or the other and says from where to where.
func copyFiles(ctx context.Context, files *sandboxfs.FS, from, to string, overwrite bool) (string, string, sandboxfs.Copied, error) {
	if inside, ok := strings.CutPrefix(to, sandboxPrefix); ok {
		host, err := filepath.Abs(from)
		if err != nil {
			return "", "", sandboxfs.Copied{}, err
		}
		dest, err := sandboxDest(ctx, files, inside, filepath.Base(host))
		if err != nil {
			return "", "", sandboxfs.Copied{}, err
		}
		done, err := files.Upload(ctx, host, dest)
		return host, sandboxPrefix + dest, done, err
	}
	inside := strings.TrimPrefix(from, sandboxPrefix)
	src, err := sandboxfs.Resolve("path", inside)
	if err != nil {
		return "", "", sandboxfs.Copied{}, err
	}
	host, err := filepath.Abs(to)
	if err != nil {
		return "", "", sandboxfs.Copied{}, err
	}
	if isDir(host) {
		host = filepath.Join(host, path.Base(src))
	}
	done, err := files.Download(ctx, src, host, overwrite)
	return sandboxPrefix + src, host, done, err
}

// sandboxDest is where a copy into the sandbox goes: inside, or, when
// inside is an existing directory, name under it.
func sandboxDest(ctx context.Context, files *sandboxfs.FS, inside, name string) (string, error) {
	dest, err := sandboxfs.Resolve("path", inside)
	if err != nil {
		return "", err
	}
	dir, err := files.IsDir(ctx, dest)
	if err != nil {
		return "", err
	}
	if dir {
		return path.Join(dest, name), nil
	}
	return dest, nil
}

func isDir(host string) bool {
	info, err := os.Stat(host)
	return err == nil && info.IsDir()
}
