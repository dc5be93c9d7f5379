package query

import (
	"context"
	"math/big"
	"testing"
)

// TestCellsOfEveryNumericType reads one value of each numeric type DuckDB
// returns through Number and Int, from a real query, and the Go types a
// driver change could bring.
func TestCellsOfEveryNumericType(t *testing.T) {
	db, err := Open(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Query(context.Background(), `SELECT 7::TINYINT, 7::SMALLINT, 7::INTEGER, 7::BIGINT, 7::HUGEINT, 7::UBIGINT,
		7.0::FLOAT, 7.0::DOUBLE, 7.00::DECIMAL(10,2), sum(7::BIGINT), NULL::BIGINT, 'x'`)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	for i, v := range row[:10] {
		if f, ok := Number(v); !ok || f != 7 {
			t.Errorf("column %d (%T %v): Number = %v, %v; want 7", i, v, v, f, ok)
		}
		if n := Int(v); n != 7 {
			t.Errorf("column %d (%T %v): Int = %d; want 7", i, v, v, n)
		}
	}
	if _, ok := Number(row[10]); ok || Int(row[10]) != 0 || Text(row[10]) != "" {
		t.Errorf("NULL read as a value")
	}
	if _, ok := Number(row[11]); ok || Text(row[11]) != "x" {
		t.Errorf("a VARCHAR read as a number")
	}
	if n := Int(new(big.Int).SetInt64(1 << 60)); n != 1<<60 {
		t.Errorf("HUGEINT 2^60 read as %d", n)
	}
}
