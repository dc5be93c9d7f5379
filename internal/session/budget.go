package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Budget is the budget in force for a session: the one its header's spec
// sets, with each budget_changed event's keys laid over it in log order
// (see State.Budget). Zero means no limit for that dimension. Its JSON is
// the spec's budget object, max_wall as a duration string ("2s"), so the
// header's spec and a budget_changed event's attrs read alike.
type Budget struct {
	MaxTokens    int64
	MaxToolCalls int64
	MaxCostUSD   float64
	MaxWall      time.Duration
}

// BudgetKeys are the keys of a budget, in the order they are shown.
var BudgetKeys = []string{"max_tokens", "max_tool_calls", "max_cost_usd", "max_wall"}

// MarshalJSON writes the spec's form of the budget, zero keys left out.
func (b Budget) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for _, k := range BudgetKeys {
		v, zero := b.value(k)
		if zero {
			continue
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, "%q:%s", k, v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads the spec's form; keys absent are zero.
func (b *Budget) UnmarshalJSON(raw []byte) error {
	*b = Budget{}
	return b.Apply(raw)
}

// value is key's value as JSON and whether it is zero.
func (b Budget) value(key string) (string, bool) {
	switch key {
	case "max_tokens":
		return strconv.FormatInt(b.MaxTokens, 10), b.MaxTokens == 0
	case "max_tool_calls":
		return strconv.FormatInt(b.MaxToolCalls, 10), b.MaxToolCalls == 0
	case "max_cost_usd":
		return strconv.FormatFloat(b.MaxCostUSD, 'g', -1, 64), b.MaxCostUSD == 0
	case "max_wall":
		return strconv.Quote(b.MaxWall.String()), b.MaxWall == 0
	}
	return "", true
}

// Apply lays the keys of raw, a JSON object in the spec's form, over b:
// a key present sets its value (0 lifts that limit), a key absent leaves
// it. An unknown key or a value of the wrong type is an error.
func (b *Budget) Apply(raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	nb := *b
	for k, v := range m {
		var err error
		switch k {
		case "max_tokens":
			err = json.Unmarshal(v, &nb.MaxTokens)
		case "max_tool_calls":
			err = json.Unmarshal(v, &nb.MaxToolCalls)
		case "max_cost_usd":
			err = json.Unmarshal(v, &nb.MaxCostUSD)
		case "max_wall":
			var s string
			if err = json.Unmarshal(v, &s); err == nil {
				nb.MaxWall, err = time.ParseDuration(s)
			}
		default:
			return fmt.Errorf("budget: unknown key %q (want one of %s)", k, strings.Join(BudgetKeys, ", "))
		}
		if err != nil {
			return fmt.Errorf("budget: %s: %w", k, err)
		}
	}
	*b = nb
	return nil
}

// Set parses one KEY=VALUE setting (resume --budget) into b: an integer for
// max_tokens and max_tool_calls, USD for max_cost_usd, a Go duration
// ("10m", "90s") for max_wall. 0 lifts the limit; a negative value is an
// error.
func (b *Budget) Set(setting string) error {
	key, val, ok := strings.Cut(setting, "=")
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	if !ok || val == "" {
		return fmt.Errorf("budget %q: want KEY=VALUE with KEY one of %s (e.g. max_wall=10m)", setting, strings.Join(BudgetKeys, ", "))
	}
	bad := func(want string) error {
		return fmt.Errorf("budget %s=%s: want %s, 0 or more", key, val, want)
	}
	switch key {
	case "max_tokens", "max_tool_calls":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 {
			return bad("a whole number of " + strings.TrimPrefix(key, "max_"))
		}
		if key == "max_tokens" {
			b.MaxTokens = n
		} else {
			b.MaxToolCalls = n
		}
	case "max_cost_usd":
		f, err := strconv.ParseFloat(strings.TrimPrefix(val, "$"), 64)
		if err != nil || f < 0 {
			return bad("an amount in USD")
		}
		b.MaxCostUSD = f
	case "max_wall":
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 {
			return bad(`a duration such as "10m" or "90s"`)
		}
		b.MaxWall = d
	default:
		return fmt.Errorf("budget %q: unknown key %q (want one of %s)", setting, key, strings.Join(BudgetKeys, ", "))
	}
	return nil
}

// BudgetChange is what changes from old to new: the JSON object of the
// keys whose value differs, with their new values (a budget_changed
// event's attrs), and those keys in BudgetKeys order. Keys is empty when
// nothing changes.
func BudgetChange(old, new Budget) (attrs json.RawMessage, keys []string) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for _, k := range BudgetKeys {
		ov, _ := old.value(k)
		nv, _ := new.value(k)
		if ov == nv {
			continue
		}
		if len(keys) > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, "%q:%s", k, nv)
		keys = append(keys, k)
	}
	buf.WriteByte('}')
	return buf.Bytes(), keys
}

// DescribeChange says "max_wall 2s → 10s, max_tokens 5000 → no limit" for
// the keys that change from old to new.
func DescribeChange(old, new Budget) string {
	_, keys := BudgetChange(old, new)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s → %s", k, old.Show(k), new.Show(k)))
	}
	return strings.Join(parts, ", ")
}

// Show is key's value as a reader reads it: "no limit" for zero.
func (b Budget) Show(key string) string {
	v, zero := b.value(key)
	if zero {
		return "no limit"
	}
	return strings.Trim(v, `"`)
}

// specBudget is the budget of a header's spec JSON (its "budget" key).
func specBudget(spec json.RawMessage) Budget {
	var s struct {
		Budget json.RawMessage `json:"budget"`
	}
	var b Budget
	if json.Unmarshal(spec, &s) == nil {
		_ = b.Apply(s.Budget) // a budget the spec could not hold is no limit, as an absent one
	}
	return b
}

// IsBudgetKey reports whether k names a budget dimension.
func IsBudgetKey(k string) bool { return slices.Contains(BudgetKeys, k) }
