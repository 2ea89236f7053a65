package engine

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// The archive API (/containers/{id}/archive) works on stopped containers
// too. Its calls go through do rather than the library's: go-dockerclient
// has no stat call, and its copy calls answer a missing path and a
// missing container with the same 404.

var _ sandboxfs.Archive = (*Client)(nil)

// statHeader carries a path's stat, base64-encoded JSON, in the answer
// to HEAD /containers/{id}/archive.
const statHeader = "X-Docker-Container-Path-Stat"

// StatPath describes a path in the container without following a final
// link.
func (e *Client) StatPath(ctx context.Context, id, path string) (sandboxfs.PathStat, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := e.archiveCall(ctx, http.MethodHead, id, path, url.Values{}, nil)
	if err != nil {
		return sandboxfs.PathStat{}, err
	}
	resp.Body.Close()
	raw, err := base64.StdEncoding.DecodeString(resp.Header.Get(statHeader))
	var st sandboxfs.PathStat
	if err == nil {
		err = json.Unmarshal(raw, &st)
	}
	if err != nil {
		return sandboxfs.PathStat{}, fmt.Errorf("docker: unreadable %s of %s: %w", statHeader, path, err)
	}
	return st, nil
}

// DownloadArchive streams a tar archive of path. It is bounded by ctx
// only: a tree may be large.
func (e *Client) DownloadArchive(ctx context.Context, id, path string) (io.ReadCloser, error) {
	resp, err := e.archiveCall(ctx, http.MethodGet, id, path, url.Values{}, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// UploadArchive extracts a tar archive into the directory dir, refusing
// to replace a directory with a non-directory or the reverse. It is
// bounded by ctx only.
func (e *Client) UploadArchive(ctx context.Context, id, dir string, archive io.Reader) error {
	resp, err := e.archiveCall(ctx, http.MethodPut, id, dir, url.Values{"noOverwriteDirNonDir": {"true"}}, archive)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// archiveCall makes one call of the archive API and maps its failures:
// a 404 is the path's unless the container is gone; a 400 or 403 is a
// refusal of the path (not a directory, a read-only file system).
func (e *Client) archiveCall(ctx context.Context, method, id, path string, query url.Values, body io.Reader) (*http.Response, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	query.Set("path", path)
	contentType := ""
	if body != nil {
		contentType = "application/x-tar"
	}
	resp, err := e.do(ctx, api, method, "/containers/"+url.PathEscape(id)+"/archive", query, body, contentType)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	apiErr := apiErrorOf(resp)
	switch resp.StatusCode {
	case http.StatusNotFound:
		if _, err := e.InspectContainer(ctx, id); err != nil {
			return nil, err
		}
		return nil, &sandboxfs.NotFoundError{Path: path}
	case http.StatusBadRequest, http.StatusForbidden:
		return nil, &sandboxfs.FieldError{Field: "path", Reason: cmp.Or(apiErr.Message, fmt.Sprintf("the engine refused %s (%s)", path, resp.Status))}
	}
	return nil, e.classify(apiErr)
}
