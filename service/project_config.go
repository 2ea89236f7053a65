package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ProjectConfig is the "sandbox" object of .pilot/settings.json: how the
// project wants its sandbox made. It applies when the container is created;
// an existing container keeps what it was made with until it is removed.
//
//	{"sandbox": {"display": {"width": 1920, "height": 1080}}}
type ProjectConfig struct {
	Display *Display `json:"display,omitempty"`
}

// Display bounds: Xvfb's own limits are far larger, but a screen beyond 8K
// costs hundreds of megabytes per screenshot.
const (
	minDisplayWidth, maxDisplayWidth   = 320, 7680
	minDisplayHeight, maxDisplayHeight = 240, 4320
)

// ConfigError is a project setting that cannot be used.
type ConfigError struct {
	File   string
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s: %s %s", e.File, e.Field, e.Reason)
}

// readProjectConfig reads the project's sandbox settings. A settings file
// that is not a JSON object gives the defaults (it is reported elsewhere);
// a "sandbox" object with a wrong field is a ConfigError.
func readProjectConfig(project string) (ProjectConfig, error) {
	var cfg ProjectConfig
	doc, err := readSettings(project)
	if errors.Is(err, errCorrupt) {
		return cfg, nil
	}
	if err != nil {
		return cfg, err
	}
	raw := doc.raw("sandbox")
	if raw == nil {
		return cfg, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, &ConfigError{File: settingsFile(project), Field: "sandbox", Reason: "is not valid: " + err.Error()}
	}
	if d := cfg.Display; d != nil {
		if d.Width < minDisplayWidth || d.Width > maxDisplayWidth {
			return cfg, &ConfigError{File: settingsFile(project), Field: "sandbox.display.width",
				Reason: fmt.Sprintf("must be from %d to %d; it is %d", minDisplayWidth, maxDisplayWidth, d.Width)}
		}
		if d.Height < minDisplayHeight || d.Height > maxDisplayHeight {
			return cfg, &ConfigError{File: settingsFile(project), Field: "sandbox.display.height",
				Reason: fmt.Sprintf("must be from %d to %d; it is %d", minDisplayHeight, maxDisplayHeight, d.Height)}
		}
	}
	return cfg, nil
}
