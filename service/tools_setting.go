package service

import (
	"errors"
)

// ToolsEnabled reads the project's agent-tools switch (dockerToolsEnabled in
// .pilot/settings.json; off unless set). A settings file that is not a JSON
// object reads as off and is logged, but left alone: it belongs to the
// desktop app too, which may be in the middle of writing it.
func (m *Manager) ToolsEnabled(path string) (bool, error) {
	project, err := CanonicalProject(path)
	if err != nil {
		return false, err
	}
	doc, err := readSettings(project)
	if errors.Is(err, errCorrupt) {
		m.log.Warn().Err(err).Str("project", project).Msg("settings file unreadable; agent tools count as off")
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return doc.bool(toolsKey), nil
}

// SetToolsEnabled switches the project's agent tools on or off, keeping every
// other setting in the file as it was.
func (m *Manager) SetToolsEnabled(path string, enabled bool) (bool, error) {
	project, err := CanonicalProject(path)
	if err != nil {
		return false, err
	}
	b := m.box(project)
	b.settingsMu.Lock()
	defer b.settingsMu.Unlock()
	aside, err := writeSettingsBool(project, toolsKey, enabled, func(p string) (string, error) {
		return setAside(p, m.cfg.Now())
	})
	if aside != "" {
		m.log.Warn().Str("project", project).Str("keptAs", aside).Msg("the settings file was corrupt; kept it aside and wrote a new one")
	}
	if err != nil {
		return false, err
	}
	return enabled, nil
}
