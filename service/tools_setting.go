package service

import "errors"

// ToolsEnabled reads the project's agent-tools switch (dockerToolsEnabled in
// .pilot/settings.json; off unless set). A settings file that cannot be read
// or is not a JSON object reads as off and is reported (a warning event),
// but left alone: it belongs to the desktop app too, which may be in the
// middle of writing it.
func (m *Manager) ToolsEnabled(path string) (bool, error) {
	project, err := CanonicalProject(path)
	if err != nil {
		return false, err
	}
	b := m.box(project)
	doc, err := readSettings(project)
	var fe *FileError
	if errors.As(err, &fe) {
		fe.Effect = "agent tools count as off until it is fixed"
		m.warn(b, fe.Path, fe)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m.warn(b, settingsFile(project), nil)
	return doc.bool(toolsKey), nil
}

// SetToolsEnabled switches the project's agent tools on or off, keeping every
// other setting in the file as it was. A file that could not be read is set
// aside (and reported) first; one that cannot be written is a FileError and
// stays as it was.
func (m *Manager) SetToolsEnabled(path string, enabled bool) (bool, error) {
	project, err := CanonicalProject(path)
	if err != nil {
		return false, err
	}
	b := m.box(project)
	b.settingsMu.Lock()
	defer b.settingsMu.Unlock()
	aside, err := writeSettingsBool(project, toolsKey, enabled, m.cfg.Now())
	if aside != nil {
		m.warn(b, settingsFile(project), aside)
	}
	if err != nil {
		return false, err
	}
	return enabled, nil
}
