package rpc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// Files is what sandbox/files/* need: the project's sandbox's files,
// running or stopped; *service.Manager is one.
type Files interface {
	Files(ctx context.Context, project string) (*sandboxfs.FS, error)
}

// Params and results of sandbox/files/* (docs/protocol.md, Sandbox files).
type (
	filePathParams struct {
		projectParams
		Path args.Path `json:"path" jsonschema:"A path in the sandbox: absolute, or relative to /home/sandbox."`
	}
	fileWriteParams struct {
		filePathParams
		Data          string  `json:"data,omitempty" jsonschema:"The file's content, base64; give data or text."`
		Text          *string `json:"text,omitempty" jsonschema:"The file's content as text (written as UTF-8); give data or text."`
		Mode          *int    `json:"mode,omitempty" jsonschema:"The file's permission bits (e.g. 420 for 0644); an existing file keeps its own when left out, a new one gets 0644."`
		CreateParents bool    `json:"createParents,omitempty" jsonschema:"Make the missing directories on the way (owned by the sandbox user)."`
	}
	fileReadParams struct {
		filePathParams
		Offset int64 `json:"offset,omitzero" jsonschema:"Where to start, in bytes."`
		Length int64 `json:"length,omitzero" jsonschema:"How many bytes to read at most."`
	}
	fileReadResult struct {
		Data string `json:"data"`
		Size int64  `json:"size"`
		EOF  bool   `json:"eof"`
	}
	fileRemoveParams struct {
		filePathParams
		Recursive bool `json:"recursive,omitempty" jsonschema:"Remove a directory with everything in it."`
	}
	fileMkdirResult struct {
		Path string `json:"path"`
	}
	fileUploadParams struct {
		projectParams
		HostPath args.Path `json:"hostPath" jsonschema:"An absolute path on the host: a file or a directory to copy."`
		Path     args.Path `json:"path" jsonschema:"Where the copy goes in the sandbox: absolute, or relative to /home/sandbox. Missing parents are made."`
	}
	fileDownloadParams struct {
		filePathParams
		HostPath  args.Path `json:"hostPath" jsonschema:"An absolute path on the host that becomes the copy; its directory must exist. A directory there gets the tree merged into it."`
		Overwrite bool      `json:"overwrite,omitempty" jsonschema:"Replace files that exist at hostPath."`
	}
)

// TuneSchema bounds the data of one write (10 MiB, base64 in data).
func (fileWriteParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["data"].MaxLength = jsonschema.Ptr(base64.StdEncoding.EncodedLen(sandboxfs.MaxIO))
	s.Properties["text"].MaxLength = jsonschema.Ptr(sandboxfs.MaxIO)
	m := s.Properties["mode"]
	m.Minimum, m.Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(511.0)
}

// TuneSchema bounds a read: at most 10 MiB per call.
func (fileReadParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["offset"].Minimum = jsonschema.Ptr(0.0)
	l := s.Properties["length"]
	l.Minimum, l.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(sandboxfs.MaxIO))
	l.Default = json.RawMessage(strconv.Itoa(sandboxfs.MaxIO))
}

// fileMethods are sandbox/files/*: they work on a stopped sandbox too,
// but remove, which needs it running.
func (s *Server) fileMethods(docker []int64) []method {
	files := append([]int64{codeNotFound, codeNotRunning}, docker...)
	return []method{
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/files/write", "Writes a whole file in the sandbox (at most 10 MiB), owned by the sandbox user; a link there is followed. Works on a stopped sandbox.", s.writeFile), files...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/files/read", "Reads a file of the sandbox, at most 10 MiB per call from offset on; size is the whole file's. Works on a stopped sandbox.", s.readFile), files...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/files/list", "What a directory of the sandbox holds (at most 50000 entries; truncated says there were more). Works on a stopped sandbox.", s.listFiles), files...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/files/stat", "One entry as list gives it (a link itself, not what it leads to), or null when nothing is there.", s.statFile), files...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/files/mkdir", "Makes a directory and its parents, owned by the sandbox user; one that exists is fine.", s.mkdir), files...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/files/remove", "Removes a file, a link or an empty directory (with recursive, any directory) as the sandbox user; needs a running sandbox. removed is false when nothing was there.", s.removeFile), files...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/files/upload", "Copies a host file or directory tree into the sandbox, streamed, with sandbox/progress (stage copy).", s.upload), files...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/files/download", "Copies a file or tree of the sandbox to hostPath, streamed, with sandbox/progress (stage copy). Never writes outside hostPath or through a link; refuses to replace a file unless overwrite; a refused download changes nothing.", s.download), files...))),
	}
}

func (s *Server) writeFile(ctx context.Context, _ *session, p fileWriteParams) (sandboxfs.Written, error) {
	data, err := writeData(p)
	if err != nil {
		return sandboxfs.Written{}, err
	}
	files, err := s.svc.Files.Files(ctx, string(p.ProjectPath))
	if err != nil {
		return sandboxfs.Written{}, err
	}
	return files.Write(ctx, sandboxfs.WriteRequest{Path: string(p.Path), Data: data, Mode: p.Mode, CreateParents: p.CreateParents})
}

// writeData is a write's content: data or text, not both.
func writeData(p fileWriteParams) ([]byte, error) {
	switch {
	case p.Text != nil && p.Data != "":
		return nil, &args.Error{Field: "text", Reason: "give data or text, not both"}
	case p.Text != nil && len(*p.Text) > sandboxfs.MaxIO:
		return nil, &args.Error{Field: "text", Reason: fmt.Sprintf("is %d bytes, more than the %d (10 MiB) of one write", len(*p.Text), sandboxfs.MaxIO)}
	case p.Text != nil:
		return []byte(*p.Text), nil
	}
	data, err := base64.StdEncoding.DecodeString(p.Data)
	if err != nil {
		return nil, &args.Error{Field: "data", Reason: "is not base64: " + err.Error()}
	}
	return data, nil
}

func (s *Server) readFile(ctx context.Context, _ *session, p fileReadParams) (fileReadResult, error) {
	files, err := s.svc.Files.Files(ctx, string(p.ProjectPath))
	if err != nil {
		return fileReadResult{}, err
	}
	r, err := files.Read(ctx, string(p.Path), p.Offset, p.Length)
	return fileReadResult{Data: base64.StdEncoding.EncodeToString(r.Data), Size: r.Size, EOF: r.EOF}, err
}

func (s *Server) listFiles(ctx context.Context, _ *session, p filePathParams) (sandboxfs.Listing, error) {
	files, err := s.svc.Files.Files(ctx, string(p.ProjectPath))
	if err != nil {
		return sandboxfs.Listing{}, err
	}
	return files.List(ctx, string(p.Path))
}

func (s *Server) statFile(ctx context.Context, _ *session, p filePathParams) (*sandboxfs.Entry, error) {
	files, err := s.svc.Files.Files(ctx, string(p.ProjectPath))
	if err != nil {
		return nil, err
	}
	return files.Stat(ctx, string(p.Path))
}

func (s *Server) mkdir(ctx context.Context, _ *session, p filePathParams) (fileMkdirResult, error) {
	files, err := s.svc.Files.Files(ctx, string(p.ProjectPath))
	if err != nil {
		return fileMkdirResult{}, err
	}
	made, err := files.Mkdir(ctx, string(p.Path))
	return fileMkdirResult{Path: made}, err
}

func (s *Server) removeFile(ctx context.Context, _ *session, p fileRemoveParams) (removeResult, error) {
	files, err := s.svc.Files.Files(ctx, string(p.ProjectPath))
	if err != nil {
		return removeResult{}, err
	}
	removed, err := files.Remove(ctx, string(p.Path), p.Recursive)
	return removeResult{Removed: removed}, err
}

func (s *Server) upload(ctx context.Context, _ *session, p fileUploadParams) (sandboxfs.Copied, error) {
	files, err := s.svc.Files.Files(ctx, string(p.ProjectPath))
	if err != nil {
		return sandboxfs.Copied{}, err
	}
	return files.Upload(ctx, string(p.HostPath), string(p.Path))
}

func (s *Server) download(ctx context.Context, _ *session, p fileDownloadParams) (sandboxfs.Copied, error) {
	files, err := s.svc.Files.Files(ctx, string(p.ProjectPath))
	if err != nil {
		return sandboxfs.Copied{}, err
	}
	return files.Download(ctx, string(p.Path), string(p.HostPath), p.Overwrite)
}
