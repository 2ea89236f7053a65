package projectfs

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// ModelProvider is one provider of config.json's models (docs/models.md):
// where the sidecar takes its key from and where its API is.
//
//	"models": {"anthropic": {"apiKeyEnv": "ANTHROPIC_API_KEY"},
//	           "openai": {"apiKeyEnv": "OPENAI_API_KEY", "baseUrl": "https://api.openai.com"}}
//
// The key itself is never in the file: a repository's content or a
// state file could be read by what the key must be kept from.
type ModelProvider struct {
	// APIKeyEnv names the environment variable of the sidecar's process
	// that holds the key.
	APIKeyEnv string
	// BaseURL is the API's root; "" is the provider's own.
	BaseURL string
}

// ModelProviders are the providers models may name.
var ModelProviders = []string{"anthropic", "openai"}

// envVarName is what a shell takes for a variable's name.
var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// models reads config.json's models.
func (p *configParser) models(raw json.RawMessage, dst *map[string]ModelProvider) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || doc == nil {
		p.fail("models", `must be an object such as {"anthropic": {"apiKeyEnv": "ANTHROPIC_API_KEY"}}; it is %s`, raw)
		return
	}
	out := map[string]ModelProvider{}
	for _, name := range sortedNames(doc) {
		key := "models." + name
		if !slices.Contains(ModelProviders, name) {
			p.fail(key, "is not a known provider (known: %s)", strings.Join(ModelProviders, ", "))
			continue
		}
		var mp struct {
			APIKeyEnv *string `json:"apiKeyEnv"`
			BaseURL   *string `json:"baseUrl"`
		}
		dec := json.NewDecoder(strings.NewReader(string(doc[name])))
		dec.DisallowUnknownFields()
		if dec.Decode(&mp) != nil {
			p.fail(key, `must be an object with apiKeyEnv and, optionally, baseUrl; it is %s`, doc[name])
			continue
		}
		if mp.APIKeyEnv == nil || !envVarName.MatchString(*mp.APIKeyEnv) {
			p.fail(key+".apiKeyEnv", `must name an environment variable of the sidecar's that holds the key, such as "ANTHROPIC_API_KEY" (never the key itself)`)
			continue
		}
		prov := ModelProvider{APIKeyEnv: *mp.APIKeyEnv}
		if mp.BaseURL != nil {
			if reason := baseURLProblem(*mp.BaseURL); reason != "" {
				p.fail(key+".baseUrl", "%s; it is %q", reason, *mp.BaseURL)
				continue
			}
			prov.BaseURL = strings.TrimSuffix(*mp.BaseURL, "/")
		}
		out[name] = prov
	}
	*dst = out
}

// baseURLProblem says what is wrong with a provider's base URL, if
// anything: an http or https URL with a host, and nothing a request's
// path or credentials could be confused with.
func baseURLProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "must be an http or https URL such as https://api.anthropic.com"
	case u.User != nil:
		return "must hold no user or password (the key comes from apiKeyEnv)"
	case u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "must have no query or fragment"
	}
	return ""
}

// ModelsKey says whether a config.json key is models or one of its own.
func ModelsKey(key string) bool { return key == "models" || strings.HasPrefix(key, "models.") }
