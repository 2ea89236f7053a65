package projectfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ToolsKey is the one key of .pilot/settings.json the sidecar owns for the
// agent-tools switch. Every other key belongs to the desktop app and is
// written back byte for byte, in its place.
const ToolsKey = "dockerToolsEnabled"

// settingsName is the settings' file in .pilot.
const settingsName = "settings.json"

// SettingsFile is the project's .pilot/settings.json.
func SettingsFile(project string) string {
	return filepath.Join(project, Dir, settingsName)
}

// Settings is a JSON object together with where each top-level value sits
// in the file, so that setting one key rewrites only that key's value (or
// appends it) and leaves every other byte of the file as it was.
type Settings struct {
	data    []byte
	spans   map[string][2]int // key -> [start, end) of its value in data
	lastEnd int               // end of the last value, or just after '{'
}

func emptySettings() *Settings {
	return &Settings{data: []byte("{}\n"), spans: map[string][2]int{}, lastEnd: 1}
}

func parseSettings(data []byte) (*Settings, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	doc := &Settings{data: data, spans: map[string][2]int{}, lastEnd: int(dec.InputOffset())}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string) // object keys are always strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		doc.spans[key] = [2]int{end - len(raw), end}
		doc.lastEnd = end
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return doc, nil
}

// Raw is a top-level value as the file has it, or nil.
func (d *Settings) Raw(key string) []byte {
	span, ok := d.spans[key]
	if !ok {
		return nil
	}
	return d.data[span[0]:span[1]]
}

// bool reads a boolean key; anything but true is false.
func (d *Settings) Bool(key string) bool {
	return string(d.Raw(key)) == "true"
}

// with returns the file's bytes with key set to the JSON value.
func (d *Settings) with(key string, value []byte) []byte {
	var out []byte
	if span, ok := d.spans[key]; ok {
		out = append(out, d.data[:span[0]]...)
		out = append(out, value...)
		return append(out, d.data[span[1]:]...)
	}
	name, _ := json.Marshal(key)
	sep := ",\n  "
	if len(d.spans) == 0 {
		sep = "\n  "
	}
	out = append(out, d.data[:d.lastEnd]...)
	out = append(out, sep...)
	out = append(out, name...)
	out = append(out, ": "...)
	out = append(out, value...)
	if len(d.spans) == 0 {
		out = append(out, '\n')
		// drop the whitespace that stood between '{' and '}'
		rest := bytes.TrimLeft(d.data[d.lastEnd:], " \t\r\n")
		return append(out, rest...)
	}
	return append(out, d.data[d.lastEnd:]...)
}

// ReadSettings loads .pilot/settings.json. A missing file is an empty
// document; so is a refused one (a link, a device, too large), which comes
// with a FileError (FileRefused) to report. One that cannot be read, or is
// not a JSON object, is a FileError and no document.
func ReadSettings(project string) (*Settings, error) {
	pilot, err := openPilot(project, false)
	if err != nil {
		return settingsOf(SettingsFile(project), nil, fileErrorOf(SettingsFile(project), err, FileUnreadable))
	}
	defer pilot.Close()
	return readSettingsIn(pilot)
}

func readSettingsIn(pilot *pilotDir) (*Settings, error) {
	path := pilot.path(settingsName)
	data, err := pilot.read(settingsName)
	if err != nil {
		err = fileErrorOf(path, err, FileUnreadable)
	}
	return settingsOf(path, data, err)
}

// settingsOf is the document a read of path gave.
func settingsOf(path string, data []byte, readErr error) (*Settings, error) {
	switch {
	case missing(readErr):
		return emptySettings(), nil
	case errors.Is(readErr, ErrRefused):
		return emptySettings(), readErr
	case readErr != nil:
		return nil, readErr
	}
	doc, err := parseSettings(data)
	if err != nil {
		return nil, &FileError{Path: path, Problem: FileCorrupt, Err: fmt.Errorf("%w: %v", errCorrupt, err)}
	}
	return doc, nil
}

// WriteSettingsBool sets one boolean key and writes the file atomically,
// keeping every other key. A corrupt or unreadable file is set aside (kept
// next to the new one) rather than overwritten: the returned FileError
// says where it went. A refused file (a link, a device, too large) is
// neither read nor replaced: that is a FileError (FileRefused), as is a
// failure to write (FileUnwritable); either leaves the file as it was.
func WriteSettingsBool(project, key string, value bool, now time.Time) (aside *FileError, err error) {
	path := SettingsFile(project)
	pilot, err := openPilot(project, true)
	if err != nil {
		return nil, fileErrorOf(path, err, FileUnwritable)
	}
	defer pilot.Close()
	perm := settingsPerm(pilot)
	doc, err := readSettingsIn(pilot)
	if err != nil {
		if aside, err = setAsideBad(pilot, settingsName, err, now); err != nil {
			return nil, err
		}
		doc = emptySettings()
	}
	data := doc.with(key, []byte(strconv.FormatBool(value)))
	if err := writeFileAtomic(pilot.root, settingsName, data, perm); err != nil {
		return aside, &FileError{Path: path, Problem: FileUnwritable, Err: bare(err)}
	}
	return aside, nil
}

// settingsPerm keeps the mode the app gave the file, or 0644 for a new one.
func settingsPerm(pilot *pilotDir) os.FileMode {
	if info, err := pilot.root.Lstat(settingsName); err == nil && info.Mode().IsRegular() {
		return info.Mode().Perm()
	}
	return 0o644
}
