package tools

// New returns the agent tools. (The tools themselves come with the tools
// issue; until then the set is empty and tools/list lists nothing.)
func New() *Set { return newSet(nil) }
