package mcpserver

import (
	"fmt"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// instructions is what a client's model reads about the server: what the
// tools do while the switch is on, and how a person turns it on while it
// is off.
func instructions(project string, on bool) string {
	if !on {
		return toolsOff(project) + " The tools appear as soon as the switch is on: this server " +
			"sends notifications/tools/list_changed."
	}
	return fmt.Sprintf("pilot-sandbox gives you a Linux desktop in a Docker container for the project %s, which "+
		"the user can watch. Start it with sandbox_start, look with sandbox_screenshot (x and y in the other tools "+
		"are pixels of the latest screenshot), act with sandbox_click, sandbox_type, sandbox_key and the others, "+
		"and run shell commands with sandbox_exec. A call answers within 45 seconds: one that takes longer (a "+
		"first start builds the sandbox image) goes on in the background, and sandbox_wait waits for it.", project)
}

// toolsOff says that the project's agent tools are off, and how to turn
// them on.
func toolsOff(project string) string {
	return fmt.Sprintf("The sandbox's agent tools are off for the project %s, so this server offers none. Ask the "+
		"user to turn them on: the Agent tools switch in the desktop app's Sandbox panel (or in the panel "+
		"`pilot-sandbox ui --project %s` opens), \"dockerToolsEnabled\": true in %s, or this server started with "+
		"`pilot-sandbox mcp --project %s --enable-tools`.", project, project, projectfs.SettingsFile(project), project)
}
