package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// pilotDir is the per-project directory the sidecar and the desktop app share.
const pilotDir = ".pilot"

// sandboxRecord is <project>/.pilot/sandbox.json: how the project remembers its
// sandbox. It holds nothing secret.
type sandboxRecord struct {
	ContainerID   string  `json:"containerId"`
	ContainerName string  `json:"containerName"`
	Image         string  `json:"image"`
	WSPort        int     `json:"wsPort"`
	VNCPort       int     `json:"vncPort"`
	Status        Status  `json:"status"`
	Display       Display `json:"display"`
	CreatedAt     int64   `json:"createdAt"`
	UpdatedAt     int64   `json:"updatedAt"`
}

func recordOf(st State, now time.Time) sandboxRecord {
	return sandboxRecord{
		ContainerID:   st.ContainerID,
		ContainerName: st.ContainerName,
		Image:         st.Image,
		WSPort:        st.WSPort,
		VNCPort:       st.VNCPort,
		Status:        st.Status,
		Display:       st.Display,
		CreatedAt:     st.CreatedAt,
		UpdatedAt:     now.UnixMilli(),
	}
}

func sandboxFile(project string) string {
	return filepath.Join(project, pilotDir, "sandbox.json")
}

// writeRecord saves the record atomically, creating .pilot/ if needed. A
// corrupt file in its place is set aside first, never overwritten; the name
// it was moved to is returned.
func writeRecord(project string, rec sandboxRecord, now time.Time) (aside string, err error) {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(project, pilotDir), 0o755); err != nil {
		return "", fmt.Errorf("write %s: %w", sandboxFile(project), err)
	}
	if _, err := readRecord(project); errors.Is(err, errCorrupt) {
		if aside, err = setAside(sandboxFile(project), now); err != nil {
			return "", fmt.Errorf("set aside corrupt %s: %w", sandboxFile(project), err)
		}
	}
	if err := writeFileAtomic(sandboxFile(project), append(data, '\n'), 0o644); err != nil {
		return aside, fmt.Errorf("write %s: %w", sandboxFile(project), err)
	}
	return aside, nil
}

// errCorrupt marks a .pilot file that exists but cannot be used as it is.
var errCorrupt = errors.New("corrupt file")

// readRecord loads the record. A missing file is (nil, nil); a corrupt one is
// an errCorrupt error.
func readRecord(project string) (*sandboxRecord, error) {
	data, err := os.ReadFile(sandboxFile(project))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", sandboxFile(project), err)
	}
	var rec sandboxRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("read %s: %w: %v", sandboxFile(project), errCorrupt, err)
	}
	return &rec, nil
}

// removeRecord deletes the record; a missing file is not an error.
func removeRecord(project string) error {
	err := os.Remove(sandboxFile(project))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", sandboxFile(project), err)
	}
	return nil
}

func recordExists(project string) bool {
	_, err := os.Stat(sandboxFile(project))
	return err == nil
}
