package netpolicy

import (
	"slices"
	"strconv"
)

// Preset is what becomes of a destination no rule names.
type Preset struct {
	Name string
	// Allow are the destinations the preset itself allows.
	Allow []Rule
	// Otherwise is the outcome for everything else.
	Otherwise Outcome
	// strictness orders presets: a repository may choose a stricter one
	// without asking.
	strictness int
}

// Names of the presets.
const (
	PresetOpen   = "open"
	PresetDev    = "dev"
	PresetLocked = "locked"
	// DefaultPreset is the preset of a user who names none.
	DefaultPreset = PresetDev
)

// Presets, from the widest to the strictest.
var presets = []*Preset{
	{Name: PresetOpen, Otherwise: Allow, strictness: 0},
	{Name: PresetDev, Allow: devRules(), Otherwise: Ask, strictness: 1},
	{Name: PresetLocked, Otherwise: Deny, strictness: 2},
}

// PresetNames are the presets' names, from the widest to the strictest.
func PresetNames() []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	return names
}

// presetNamed returns the preset, or nil.
func presetNamed(name string) *Preset {
	i := slices.IndexFunc(presets, func(p *Preset) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	return presets[i]
}

// stricter says whether a allows less than b.
func (a *Preset) stricter(b *Preset) bool { return a.strictness > b.strictness }

// devHosts are the package registries of the images' OS and languages and
// the common git hosts, over HTTP and HTTPS (docs/protocol.md, "Network
// policy"). Each name is exact (a registry's mirrors and CDNs that a
// client is redirected to are listed by name), but for Ubuntu's country
// mirrors (us.archive.ubuntu.com), which only Canonical can name.
var devHosts = []string{
	// Debian and Ubuntu archives (apt-get)
	"deb.debian.org", "security.debian.org", "ftp.debian.org",
	"archive.ubuntu.com", "*.archive.ubuntu.com", "security.ubuntu.com", "ports.ubuntu.com",
	// npm and yarn
	"registry.npmjs.org", "registry.yarnpkg.com", "repo.yarnpkg.com",
	// PyPI (pip): the index and the files it links to
	"pypi.org", "files.pythonhosted.org",
	// Go modules
	"proxy.golang.org", "sum.golang.org",
	// crates.io (cargo)
	"crates.io", "index.crates.io", "static.crates.io",
	// RubyGems
	"rubygems.org", "index.rubygems.org",
	// Maven Central
	"repo.maven.apache.org", "repo1.maven.org",
	// GitHub: the site, its API, archives and release and raw files
	"github.com", "api.github.com", "codeload.github.com",
	"objects.githubusercontent.com", "raw.githubusercontent.com", "release-assets.githubusercontent.com",
	// GitLab and Bitbucket
	"gitlab.com", "bitbucket.org",
}

// gitSSH are the git hosts' ssh: port 22, and their ssh over port 443
// for networks that block 22.
var gitSSH = []string{
	"github.com:22", "gitlab.com:22", "bitbucket.org:22",
	"ssh.github.com:443", "altssh.gitlab.com:443", "altssh.bitbucket.org:443",
}

func devRules() []Rule {
	var rules []Rule
	for _, h := range devHosts {
		for _, port := range []int{80, 443} {
			rules = append(rules, mustRule(h+":"+strconv.Itoa(port)))
		}
	}
	for _, r := range gitSSH {
		rules = append(rules, mustRule(r))
	}
	return rules
}

func mustRule(s string) Rule {
	r, err := ParseRule(s)
	if err != nil {
		panic(err) // a typo in the lists above
	}
	return r
}
