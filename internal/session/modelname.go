package session

// ModelName is how every output names the model a session or a call used:
// "provider/model". An imported transcript may record no model (Cursor's
// keep none) or no provider; "cursor/" or "/" would read as a truncated
// name, so the missing part is said instead. The viewer's script (pm in
// internal/view/assets/view.js) is a second copy, held to this one by
// internal/view TestScriptModelNameIsGos.
func ModelName(provider, model string) string {
	switch {
	case model != "" && provider != "":
		return provider + "/" + model
	case model != "":
		return model
	case provider != "":
		return provider + " (model not recorded)"
	}
	return "not recorded"
}
