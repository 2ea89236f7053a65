package rpc

import (
	"testing"
)

func TestToolsFollowTheProjectSwitch(t *testing.T) {
	dir := t.TempDir()
	c := serve(t, newFakeService())
	list := func() []any {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"projectPath":"` + dir + `"}}`)
		return c.read()["result"].(map[string]any)["tools"].([]any)
	}
	if got := list(); len(got) != 0 {
		t.Errorf("tools listed for a project whose tools are off: %v", got)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"projectPath":"` + dir + `","name":"echo","arguments":{}}}`)
	if code, kind, _ := errorOf(c.read()); code != -32005 || kind != "tools_disabled" {
		t.Errorf("tools/call with tools off: %d %s", int(code), kind)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"sandbox/setToolsEnabled","params":{"projectPath":"` + dir + `","enabled":true}}`)
	c.read()
	if got := list(); len(got) != 1 {
		t.Errorf("tools listed with tools on: %v", got)
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"projectPath":"` + dir + `","name":"echo","arguments":{"a":1}}}`)
	res := c.read()["result"].(map[string]any)
	if res["isError"] != false || res["content"].([]any)[0].(map[string]any)["text"] != `{"a":1}` {
		t.Errorf("tools/call: %v", res)
	}
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"projectPath":"` + dir + `","name":"echo"}}`)
	if res := c.read()["result"].(map[string]any); res["content"].([]any)[0].(map[string]any)["text"] != `{}` {
		t.Errorf("tools/call without arguments: %v", res)
	}
	c.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"projectPath":"` + dir + `","name":"nope","arguments":{}}}`)
	if code, kind, field := errorOf(c.read()); code != -32602 || kind != "invalid_params" || field != "name" {
		t.Errorf("unknown tool: %d %s %s", int(code), kind, field)
	}
}
