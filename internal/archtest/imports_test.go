package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the path the packages' import paths start with.
const module = "github.com/pilot-sandbox/pilot-sandbox"

// allowed is the graph of imports between the module's packages: for each
// package (its path in the module), the packages of the module its code
// imports. Only the product's code counts: a test may import more (the
// benchmarks of tools and mcpserver go through rpc). docs/architecture.md
// draws this graph; a change to one is a change to the other. It is the
// graph as it is, not a ceiling: an edge the code no longer has must go
// too, so that the drawing stays true.
var allowed = map[string][]string{
	"activity":            nil,
	"args":                nil,
	"args/argstest":       {"args"},
	"cdprelay":            nil,
	"cmd/pilot-sandbox":   {"activity", "egress", "engine", "gateway", "images", "mcpserver", "netpolicy", "permission", "ports", "projectfs", "recording", "resources", "rpc", "rpc/wire", "sandboxfs", "service", "tasks", "tools", "ui", "workspace"},
	"desktop":             {"resources"},
	"disklimit":           nil,
	"egress":              {"desktop", "resources", "service"},
	"engine":              {"images", "sandboxfs", "service"},
	"gateway":             nil,
	"images":              {"projectfs"},
	"internal/archtest":   nil,
	"internal/dockertest": {"egress", "engine", "images", "internal/testlog", "resources", "service", "workspace"},
	"internal/sshtest":    {"internal/dockertest"},
	"internal/jsonsize":   nil,
	"internal/pngtest":    nil,
	"internal/rfbtest":    nil,
	"internal/tcptest":    nil,
	"internal/testlog":    nil,
	"internal/textdiff":   nil,
	"mcpserver":           {"permission", "projectfs", "tools"},
	"netpolicy":           nil,
	"permission":          {"projectfs"},
	"pidguard":            nil,
	"ports":               {"cdprelay", "desktop", "gateway", "projectfs", "relay", "service"},
	"projectfs":           {"netpolicy"},
	"readiness":           {"desktop", "projectfs"},
	"recording":           {"desktop", "projectfs", "service"},
	"relay":               {"resources"},
	"resources":           nil,
	"rpc":                 {"activity", "args", "desktop", "netpolicy", "permission", "ports", "projectfs", "recording", "rpc/wire", "sandboxfs", "service", "tasks", "tools", "workspace"},
	"rpc/wire":            nil,
	"sandboxfs":           nil,
	"service":             {"desktop", "disklimit", "images", "internal/jsonsize", "internal/textdiff", "netpolicy", "pidguard", "projectfs", "readiness", "sandboxfs", "shell"},
	"shell":               nil,
	"tasks":               {"projectfs", "workspace"},
	"tools":               {"activity", "args", "desktop", "projectfs", "service"},
	"ui":                  nil,
	"workspace":           {"projectfs"},
}

// libraries are the third-party libraries docs/architecture.md names, and
// the packages whose code may import them (a library's packages count as
// the library): go-dockerclient's types stay in engine, jsonrpc2 in the
// JSON-RPC server. As allowed, it is the graph as it is.
var libraries = map[string][]string{
	"github.com/fsouza/go-dockerclient":      {"engine"},
	"github.com/sourcegraph/jsonrpc2":        {"rpc", "rpc/wire"},
	"github.com/modelcontextprotocol/go-sdk": {"cmd/pilot-sandbox", "mcpserver", "tools"},
	"github.com/google/jsonschema-go":        {"args", "args/argstest", "rpc", "tools"},
	"github.com/gorilla/websocket":           {"desktop", "internal/rfbtest", "rpc", "rpc/wire"},
	"golang.org/x/net":                       {"egress", "netpolicy"},
}

// TestImportsAreAsDrawn checks the module's packages, as go list sees them,
// against allowed and libraries.
func TestImportsAreAsDrawn(t *testing.T) {
	pkgs, err := listPackages()
	if err != nil {
		t.Fatal(err)
	}
	graph := ours(pkgs)
	problems := check(graph, allowed)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Logf("the graph as it is, for allowed (and docs/architecture.md):\n%s", format(graph))
	}
	for _, p := range checkLibraries(pkgs, libraries) {
		t.Error(p)
	}
}

// listPackages lists the module's packages (their paths in the module) and
// what each one's code imports (go list's Imports: not its tests').
// GOPROXY=off: the packages are all here, and nothing may be fetched to
// list them.
func listPackages() (map[string][]string, error) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	return parseList(out)
}

// parseList reads go list -json's stream of packages, their paths made
// relative to the module.
func parseList(out []byte) (map[string][]string, error) {
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var pkg struct {
			ImportPath string
			Imports    []string
		}
		err := dec.Decode(&pkg)
		if err == io.EOF {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read go list's output: %w", err)
		}
		pkgs[strings.TrimPrefix(pkg.ImportPath, module+"/")] = pkg.Imports
	}
}

// ours is the graph of pkgs between the module's packages.
func ours(pkgs map[string][]string) map[string][]string {
	graph := map[string][]string{}
	for pkg, imports := range pkgs {
		var mine []string
		for _, imp := range imports {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				mine = append(mine, rel)
			}
		}
		graph[pkg] = mine
	}
	return graph
}

// checkLibraries says where pkgs differ from libraries: a package that
// imports a library it does not list, and a package it lists that no
// longer imports it.
func checkLibraries(pkgs, libraries map[string][]string) []string {
	var problems []string
	for _, lib := range slices.Sorted(maps.Keys(libraries)) {
		var users []string
		for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
			if slices.ContainsFunc(pkgs[pkg], func(imp string) bool { return imp == lib || strings.HasPrefix(imp, lib+"/") }) {
				users = append(users, pkg)
			}
		}
		for _, pkg := range users {
			if !slices.Contains(libraries[lib], pkg) {
				problems = append(problems, fmt.Sprintf("%s imports %s, which only %v may", pkg, lib, libraries[lib]))
			}
		}
		for _, pkg := range libraries[lib] {
			if !slices.Contains(users, pkg) {
				problems = append(problems, fmt.Sprintf("the table lets %s import %s, which it does not any more: take it out", pkg, lib))
			}
		}
	}
	return problems
}

// check says how graph differs from allowed: an import allowed does not
// list, a package it does not know, and what it lists that is not there
// any more.
func check(graph, allowed map[string][]string) []string {
	var problems []string
	for _, pkg := range slices.Sorted(maps.Keys(graph)) {
		may, known := allowed[pkg]
		if !known {
			problems = append(problems, fmt.Sprintf("package %s is not in the graph: draw it, with its imports %v", pkg, graph[pkg]))
			continue
		}
		for _, imp := range graph[pkg] {
			if !slices.Contains(may, imp) {
				problems = append(problems, fmt.Sprintf("%s imports %s, which the graph does not allow", pkg, imp))
			}
		}
		for _, imp := range may {
			if !slices.Contains(graph[pkg], imp) {
				problems = append(problems, fmt.Sprintf("the graph lets %s import %s, which it does not any more: take the edge out", pkg, imp))
			}
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(allowed)) {
		if _, ok := graph[pkg]; !ok {
			problems = append(problems, fmt.Sprintf("package %s of the graph is gone: take it out", pkg))
		}
	}
	return problems
}

// format writes graph as allowed's entries.
func format(graph map[string][]string) string {
	var b strings.Builder
	for _, pkg := range slices.Sorted(maps.Keys(graph)) {
		imps := graph[pkg]
		if len(imps) == 0 {
			fmt.Fprintf(&b, "\t%q: nil,\n", pkg)
			continue
		}
		fmt.Fprintf(&b, "\t%q: {%q", pkg, imps[0])
		for _, imp := range imps[1:] {
			fmt.Fprintf(&b, ", %q", imp)
		}
		b.WriteString("},\n")
	}
	return b.String()
}

// TestCheck: the checker finds each way a graph can differ from the one
// drawn, and nothing in a graph that matches it.
func TestCheck(t *testing.T) {
	drawn := map[string][]string{
		"rpc":      {"rpc/wire", "service"},
		"service":  {"engine"},
		"engine":   nil,
		"rpc/wire": nil,
	}
	for _, tc := range []struct {
		name  string
		graph map[string][]string
		want  []string
	}{
		{"as drawn", drawn, nil},
		{"a forbidden import", with(drawn, "service", "engine", "rpc"),
			[]string{"service imports rpc, which the graph does not allow"}},
		{"an import the wire may not make", with(drawn, "rpc/wire", "service"),
			[]string{"rpc/wire imports service, which the graph does not allow"}},
		{"a new package", with(drawn, "relay"),
			[]string{"package relay is not in the graph: draw it, with its imports []"}},
		{"an edge that is gone", with(drawn, "rpc", "rpc/wire"),
			[]string{"the graph lets rpc import service, which it does not any more: take the edge out"}},
		{"a package that is gone", without(drawn, "engine"),
			[]string{"package engine of the graph is gone: take it out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := check(tc.graph, drawn); !slices.Equal(got, tc.want) {
				t.Errorf("check = %q\nwant %q", got, tc.want)
			}
		})
	}
}

// with is graph with pkg's imports replaced by imports.
func with(graph map[string][]string, pkg string, imports ...string) map[string][]string {
	g := maps.Clone(graph)
	g[pkg] = imports
	return g
}

// without is graph without pkg.
func without(graph map[string][]string, pkg string) map[string][]string {
	g := maps.Clone(graph)
	delete(g, pkg)
	return g
}

// TestCheckLibraries: a library imported where the table does not name it,
// by the library's root or one of its packages, and a user that is gone.
func TestCheckLibraries(t *testing.T) {
	named := map[string][]string{"github.com/fsouza/go-dockerclient": {"engine"}}
	for _, tc := range []struct {
		name string
		pkgs map[string][]string
		want []string
	}{
		{"as named", map[string][]string{"engine": {"github.com/fsouza/go-dockerclient"}, "service": {"context"}}, nil},
		{"another package imports it", map[string][]string{
			"engine":  {"github.com/fsouza/go-dockerclient"},
			"service": {"github.com/fsouza/go-dockerclient/internal/x"},
		}, []string{"service imports github.com/fsouza/go-dockerclient, which only [engine] may"}},
		{"a library of a longer name is another", map[string][]string{
			"engine":  {"github.com/fsouza/go-dockerclient"},
			"service": {"github.com/fsouza/go-dockerclient2"},
		}, nil},
		{"its user no longer imports it", map[string][]string{"engine": {"context"}},
			[]string{"the table lets engine import github.com/fsouza/go-dockerclient, which it does not any more: take it out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkLibraries(tc.pkgs, named); !slices.Equal(got, tc.want) {
				t.Errorf("checkLibraries = %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestParseList reads go list's stream, paths made relative to the module;
// ours keeps the module's packages of what they import.
func TestParseList(t *testing.T) {
	out := []byte(`{"ImportPath": "` + module + `/rpc", "Imports": ["context", "` + module + `/rpc/wire", "github.com/sourcegraph/jsonrpc2"]}
{"ImportPath": "` + module + `/rpc/wire", "Imports": ["context"]}
`)
	pkgs, err := parseList(out)
	if err != nil {
		t.Fatal(err)
	}
	wantPkgs := map[string][]string{"rpc": {"context", module + "/rpc/wire", "github.com/sourcegraph/jsonrpc2"}, "rpc/wire": {"context"}}
	if !maps.EqualFunc(pkgs, wantPkgs, slices.Equal) {
		t.Errorf("packages = %v, want %v", pkgs, wantPkgs)
	}
	want := map[string][]string{"rpc": {"rpc/wire"}, "rpc/wire": nil}
	if graph := ours(pkgs); !maps.EqualFunc(graph, want, slices.Equal) {
		t.Errorf("graph = %v, want %v", graph, want)
	}
}
