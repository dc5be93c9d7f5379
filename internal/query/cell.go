package query

import (
	"fmt"
	"math/big"
)

// The values of a Result's cells are what the DuckDB driver returns for
// each column type (BIGINT int64, HUGEINT *big.Int, DECIMAL a Stringer,
// VARCHAR string, NULL nil...). Text, Number and Int read them the one
// way every caller that computes with a cell needs, so a type the driver
// changes is handled in one place.

// Text is a cell as text: "" for NULL.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

// Number is a numeric cell (any integer or float width, HUGEINT, DECIMAL)
// as a float64; ok is false for NULL and for anything not a number.
func Number(v any) (f float64, ok bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case int:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, true
	case fmt.Stringer:
		// DECIMAL arrives as duckdb.Decimal, a Stringer.
		if _, err := fmt.Sscan(x.String(), &f); err == nil {
			return f, true
		}
	}
	return 0, false
}

// Int is a numeric cell as an int64 (integers exactly, HUGEINT within
// int64, anything else through Number, truncated); 0 for NULL.
func Int(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint64:
		return int64(x)
	case *big.Int:
		return x.Int64()
	}
	f, _ := Number(v)
	return int64(f)
}
