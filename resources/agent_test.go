package resources_test

import (
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/resources"
)

// TestAgentPython runs the desktop agent's Python tests (agent/test_*.py) in
// a sandbox, where the image has what the agent uses: python3, Xvfb, xclip,
// libX11 and libXtst. Each X test starts its own Xvfb, so the sandbox's
// desktop is not touched; PILOT_AGENT_REQUIRE_X makes a missing Xvfb a
// failure there rather than a skip. The agent is the one this package
// embeds; the tests and the contract come from the source tree.
func TestAgentPython(t *testing.T) {
	m, project := startedSandbox(t)
	files := treeOf(t, "agent")
	files["agent.py"] = resources.DesktopAgent()
	pythonSuite{
		what: "the agent", dir: "/tmp/agent-tests", files: files,
		env: []string{"PILOT_AGENT_REQUIRE_X=1"},
	}.run(t, m, project)
}
