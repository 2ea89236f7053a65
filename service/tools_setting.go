package service

import (
	"errors"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// ToolsEnabled reads the project's agent-tools switch (dockerToolsEnabled in
// .pilot/settings.json; off unless set). A settings file that cannot be read
// or is not a JSON object reads as off and is reported (a warning event),
// but left alone: it belongs to the desktop app too, which may be in the
// middle of writing it.
func (m *Manager) ToolsEnabled(path string) (bool, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return false, err
	}
	b := m.box(project)
	doc, err := projectfs.ReadSettings(project)
	var fe *projectfs.FileError
	if errors.As(err, &fe) {
		fe.Effect = "agent tools count as off until it is fixed"
		m.warn(b, fe.Path, fe)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m.warn(b, projectfs.SettingsFile(project), nil)
	return doc.Bool(projectfs.ToolsKey), nil
}

// SetToolsEnabled switches the project's agent tools on or off, keeping every
// other setting in the file as it was. A file that could not be read is set
// aside (and reported) first; one that cannot be written is a projectfs.FileError and
// stays as it was.
func (m *Manager) SetToolsEnabled(path string, enabled bool) (bool, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return false, err
	}
	b := m.box(project)
	b.settingsMu.Lock()
	defer b.settingsMu.Unlock()
	aside, err := projectfs.WriteSettingsBool(project, projectfs.ToolsKey, enabled, m.cfg.Now())
	if aside != nil {
		m.warn(b, projectfs.SettingsFile(project), aside)
	}
	if err != nil {
		return false, err
	}
	return enabled, nil
}
