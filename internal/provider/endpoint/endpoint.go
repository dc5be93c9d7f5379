// Package endpoint names where each model provider's API lives when a
// spec gives no base_url. It is a leaf so that every reader of that fact
// (the providers' clients, the proxy's upstream, the OTLP exporter's
// server.address) takes it from here without linking the vendor SDKs.
package endpoint

// The API roots of the providers agentctl speaks to.
const (
	OpenAI    = "https://api.openai.com/v1"
	Anthropic = "https://api.anthropic.com"
	Gemini    = "https://generativelanguage.googleapis.com"
)

// Default is the API root of provider ("openai", "anthropic", "gemini"), or "" for
// one that has no network endpoint (scripted) or that agentctl does not
// know.
func Default(provider string) string {
	switch provider {
	case "openai":
		return OpenAI
	case "anthropic":
		return Anthropic
	case "gemini":
		return Gemini
	}
	return ""
}

// Base is baseURL when it is set, else the provider's default.
func Base(provider, baseURL string) string {
	if baseURL != "" {
		return baseURL
	}
	return Default(provider)
}
