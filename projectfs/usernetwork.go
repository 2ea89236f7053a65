package projectfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
)

// EditUserNetwork changes keys of config.json's network object (the user's
// network policy: pilot-sandbox net allow, deny, preset) and writes the
// file atomically, keeping every other byte of it: other keys, other
// members of network, their order and spacing. edit gets the members as
// written and returns the ones to set. The result must be a usable
// network policy, or nothing is written; so must the file be a JSON
// object (a broken file is the user's to fix, never overwritten). A link
// in config.json's place (dotfiles kept elsewhere) is followed: the file
// is the user's own.
func EditUserNetwork(path string, edit func(members map[string]json.RawMessage) (map[string]json.RawMessage, error)) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if unlock, err := lockWithin(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock"), registryLockWait); err == nil {
		defer unlock()
	}
	data, perm, err := readUserConfigFile(path)
	if err != nil {
		return err
	}
	doc, err := parseSettings(data)
	if err != nil {
		return fmt.Errorf("%s is not a JSON object (%v): fix it first; nothing was written", path, err)
	}
	network, err := networkObject(path, doc.Raw("network"))
	if err != nil {
		return err
	}
	members := map[string]json.RawMessage{}
	for key := range network.spans {
		members[key] = network.Raw(key)
	}
	set, err := edit(members)
	if err != nil {
		return err
	}
	value := editedNetwork(network, set)
	if _, problems := netpolicy.ParseConfig(value); problems != nil {
		return fmt.Errorf("the network policy would not be usable: %s %s; nothing was written", problems[0].Key, problems[0].Reason)
	}
	return writeUserConfig(path, doc.with("network", value), perm)
}

// editedNetwork is the network object with the members set, written anew
// (the object is the sidecar's to format): its members in their order,
// new ones last, indented as a member of config.json.
func editedNetwork(network *Settings, set map[string]json.RawMessage) []byte {
	keys := sortedNames(network.spans)
	slices.SortFunc(keys, func(a, b string) int { return network.spans[a][0] - network.spans[b][0] })
	for _, k := range sortedNames(set) {
		if _, ok := network.spans[k]; !ok {
			keys = append(keys, k)
		}
	}
	var b bytes.Buffer
	b.WriteString("{")
	for i, k := range keys {
		value, ok := set[k]
		if !ok {
			value = network.Raw(k)
		}
		if i > 0 {
			b.WriteString(",")
		}
		name, _ := json.Marshal(k)
		b.WriteString("\n    ")
		b.Write(name)
		b.WriteString(": ")
		if json.Indent(&b, value, "    ", "  ") != nil {
			b.Write(value)
		}
	}
	b.WriteString("\n  }")
	return b.Bytes()
}

// readUserConfigFile reads config.json for a rewrite: a missing one is an
// empty object.
func readUserConfigFile(path string) ([]byte, os.FileMode, error) {
	data, err := readBounded(path, MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return []byte("{}\n"), 0o600, nil
	}
	if err != nil {
		return nil, 0, err
	}
	perm := os.FileMode(0o600)
	if info, err := os.Stat(path); err == nil {
		perm = info.Mode().Perm()
	}
	return data, perm, nil
}

// networkObject is config.json's network as an object to edit: absent and
// "default" are an empty one; "none" is refused, since an edit of the
// policy would not give a sandbox a network.
func networkObject(path string, raw []byte) (*Settings, error) {
	var s string
	switch {
	case raw == nil:
		return parseSettings([]byte("{}"))
	case json.Unmarshal(raw, &s) == nil && s == "default":
		return parseSettings([]byte("{}"))
	case s == NetworkNone:
		return nil, fmt.Errorf(`%s says "network": "none": no sandbox has a network; change that first; nothing was written`, path)
	}
	doc, err := parseSettings(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: network is not an object: fix it first; nothing was written", path)
	}
	return doc, nil
}

// writeUserConfig replaces config.json atomically.
func writeUserConfig(path string, data []byte, perm os.FileMode) error {
	dir, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return writeFileAtomic(dir, filepath.Base(path), data, perm)
}
