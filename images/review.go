package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// A project's Dockerfile is shown to the user before it is built
// (docs/protocol.md, "Approvals show what they approve"): its text, the
// files its COPY and ADD take from the context, and warnings for what
// reaches beyond the project. Two things it may not do at all, because the
// engine does them itself, on the user's machine, with the machine's
// network (its 127.0.0.1 included), not in the build's container: fetch a
// URL (ADD http://...), and pull an image from a registry on the machine
// or its private network (docs/security.md, A project's build).

// Bounds of what a review shows of the context's files.
const (
	// maxShownFile is the largest file whose text is shown.
	maxShownFile = 64 << 10
	// maxShownFiles bounds the text of all files shown.
	maxShownFiles = 256 << 10
)

// Review is what building a project's context would do, for the user.
type Review struct {
	// Dockerfile is its text.
	Dockerfile string
	// Files are the files of the context its COPY and ADD name.
	Files []ShownFile
	// Warnings are its lines that reach beyond the project.
	Warnings []string
}

// ShownFile is a file of the context as a review shows it: its text, or
// why not.
type ShownFile struct {
	Path    string `json:"path"` // relative to the project
	Size    int64  `json:"size"`
	Text    string `json:"text,omitempty"`
	Omitted string `json:"omitted,omitempty"`
}

// RefusedError is a Dockerfile the sidecar does not build: Line says which
// line, and why.
type RefusedError struct {
	Line   int
	Reason string
}

func (e *RefusedError) Error() string { return fmt.Sprintf("line %d %s", e.Line, e.Reason) }

// ReviewContext reads bc's Dockerfile and the files it takes. A Dockerfile
// that fetches a URL with ADD, or takes an image from a registry on this
// machine or its private network, is a RefusedError.
func ReviewContext(bc projectfs.BuildContext) (Review, error) {
	files, err := contextFiles(bc.Tar)
	if err != nil {
		return Review{}, err
	}
	text := string(files[bc.Name])
	r := Review{Dockerfile: text}
	var sources []string
	stages := map[string]bool{}
	for _, in := range instructions(text) {
		srcs, warnings, err := in.review(stages)
		if err != nil {
			return Review{}, err
		}
		sources = append(sources, srcs...)
		r.Warnings = append(r.Warnings, warnings...)
	}
	r.Files = shownFiles(files, bc, sources)
	return r, nil
}

// contextFiles reads the context's files (bounded by
// projectfs.MaxContextBytes when it was packed).
func contextFiles(tarball []byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(tarball))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the build context: %w", err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				return nil, fmt.Errorf("read the build context: %w", err)
			}
			out[h.Name] = data
		}
	}
}

// instruction is one Dockerfile instruction: its first line's number, its
// keyword (upper case) and the rest, continuation lines joined.
type instruction struct {
	line    int
	keyword string
	args    string
}

// instructions splits a Dockerfile into its instructions, leaving out
// comments and empty lines; a line ending in a backslash continues.
func instructions(text string) []instruction {
	var out []instruction
	var cur *instruction
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		if cur == nil && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur != nil && strings.HasPrefix(line, "#") {
			continue // a comment inside a continued instruction
		}
		more := strings.HasSuffix(line, "\\")
		line = strings.TrimSuffix(line, "\\")
		if cur == nil {
			keyword, args, _ := strings.Cut(line, " ")
			out = append(out, instruction{line: i + 1, keyword: strings.ToUpper(keyword), args: args})
			cur = &out[len(out)-1]
		} else {
			cur.args += " " + line
		}
		if !more {
			cur = nil
		}
	}
	return out
}

// review says what one instruction takes from the context (COPY and ADD
// sources), and warns of or refuses what reaches beyond the project.
// stages are the build's stage names so far.
func (in instruction) review(stages map[string]bool) (sources, warnings []string, err error) {
	flags, words := splitFlags(fields(in.args))
	warn := func(format string, a ...any) {
		warnings = append(warnings, fmt.Sprintf("line %d: ", in.line)+fmt.Sprintf(format, a...))
	}
	for _, addr := range hostAddresses(in.args) {
		warn("%s names %s, an address of this machine or its network", in.keyword, addr)
	}
	switch in.keyword {
	case "FROM":
		if len(words) >= 3 && strings.EqualFold(words[1], "AS") {
			defer func() { stages[strings.ToLower(words[2])] = true }()
		}
		if len(words) > 0 {
			return nil, warnings, in.checkImage(words[0], stages, warn)
		}
	case "COPY", "ADD":
		if from := flags["from"]; from != "" {
			return nil, warnings, in.checkImage(from, stages, warn)
		}
		if len(words) < 2 {
			return nil, warnings, nil
		}
		for _, src := range words[:len(words)-1] {
			if isURL(src) {
				return nil, nil, &RefusedError{in.line, fmt.Sprintf("has %s fetch %s: the engine fetches it itself, on this machine "+
					"and with its network (127.0.0.1 included), not in the build's container; fetch it with RUN "+
					"(curl -fsSLo DEST URL) instead", in.keyword, src)}
			}
			sources = append(sources, src)
		}
	case "RUN":
		for _, f := range []string{"network", "mount", "security", "device"} {
			if v, ok := flags[f]; ok {
				warn("RUN --%s=%s changes what the step may reach", f, v)
			}
		}
	}
	return sources, warnings, nil
}

// checkImage warns that the engine pulls ref (an image, not a stage of
// this build nor the browser image it builds on), and refuses one from a
// registry on this machine or its private network.
func (in instruction) checkImage(ref string, stages map[string]bool, warn func(string, ...any)) error {
	switch {
	case stages[strings.ToLower(ref)], ref == "${PILOT_BASE}", ref == "$PILOT_BASE", isNumber(ref):
		return nil
	}
	registry := "Docker Hub"
	if host, _, ok := strings.Cut(ref, "/"); ok && (strings.ContainsAny(host, ".:[") || host == "localhost") {
		registry = host
		if name, _, err := net.SplitHostPort(host); err == nil {
			host = name
		}
		if localAddress(strings.Trim(host, "[]")) {
			return &RefusedError{in.line, fmt.Sprintf("takes the image %s from %s: the engine pulls it itself, from a registry "+
				"on this machine or its network", ref, registry)}
		}
	}
	warn("%s takes the image %s, which the engine pulls from %s", in.keyword, ref, registry)
	return nil
}

// fields splits an instruction's arguments on spaces, or reads its JSON
// array form (["a", "b"]) as plain strings.
func fields(args string) []string {
	args = strings.TrimSpace(args)
	if !strings.HasPrefix(args, "[") {
		return strings.Fields(args)
	}
	var out []string
	for _, m := range jsonString.FindAllStringSubmatch(args, -1) {
		out = append(out, m[1])
	}
	return out
}

var jsonString = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// splitFlags takes the --name=value flags off the front of words.
func splitFlags(words []string) (map[string]string, []string) {
	flags := map[string]string{}
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		name, value, _ := strings.Cut(strings.TrimPrefix(words[0], "--"), "=")
		flags[strings.ToLower(name)] = value
		words = words[1:]
	}
	return flags, words
}

func isURL(src string) bool {
	return strings.Contains(src, "://") || strings.HasPrefix(src, "git@")
}

func isNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// hostNames are names that lead to the user's machine from a container or
// the engine.
var hostNames = regexp.MustCompile(`(?i)\b(localhost|host\.docker\.internal|gateway\.docker\.internal|host-gateway)\b`)

var ipv4 = regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}\b|\[?::1\]?`)

// hostAddresses are the names and address literals in text that lead to
// this machine or its private network (loopback, private, link-local: the
// cloud's metadata address too).
func hostAddresses(text string) []string {
	out := hostNames.FindAllString(text, -1)
	for _, m := range ipv4.FindAllString(text, -1) {
		if localAddress(strings.Trim(m, "[]")) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// localAddress says whether host is localhost or a loopback, private,
// link-local or unspecified address.
func localAddress(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && (a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified())
}

// shownFiles are the context's files that the sources name (Docker's
// patterns: a path, a directory and all beneath, a glob), with their text
// where it is short text, within maxShownFiles.
func shownFiles(files map[string][]byte, bc projectfs.BuildContext, sources []string) []ShownFile {
	var names []string
	for name := range files {
		if name != bc.Name && named(name, sources) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]ShownFile, 0, len(names))
	budget := maxShownFiles
	for _, name := range names {
		data := files[name]
		f := ShownFile{Path: path.Join(bc.Dir, name), Size: int64(len(data))}
		switch {
		case len(data) > maxShownFile:
			f.Omitted = fmt.Sprintf("larger than %d KiB", maxShownFile>>10)
		case !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0:
			f.Omitted = "not text"
		case len(data) > budget:
			f.Omitted = fmt.Sprintf("past the %d KiB of files shown", maxShownFiles>>10)
		default:
			f.Text, budget = string(data), budget-len(data)
		}
		out = append(out, f)
	}
	return out
}

// named says whether a COPY or ADD source takes the context file name: the
// source, cleaned, matches the name or one of its parent directories.
func named(name string, sources []string) bool {
	for _, src := range sources {
		src = strings.TrimPrefix(path.Clean("/"+src), "/")
		if src == "" {
			return true // the whole context
		}
		for prefix := name; prefix != "." && prefix != ""; prefix = path.Dir(prefix) {
			if ok, _ := path.Match(src, prefix); ok {
				return true
			}
		}
	}
	return false
}
