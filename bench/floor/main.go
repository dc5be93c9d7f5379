// Command floor is the reference of bench/run's query rows: a bare
// duckdb-go process that opens an in-memory database, runs one SQL
// statement over the Parquet files named on the command line (as the view
// `events` that agentctl query defines over the same files) and prints the
// rows. Nothing else: no manifest, no logs, no views over sessions. Its
// time is the floor under `agentctl query` over the same files.
//
//	floor 'SELECT count(*) FROM events' a.parquet b.parquet
package main

import (
	"database/sql"
	"fmt"
	"os"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"

	_ "github.com/agentctl/agentctl/internal/staticlink" // linked as agentctl is
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: floor SQL FILE.parquet...")
		os.Exit(1)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(q string, files []string) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	qs := make([]string, len(files))
	for i, f := range files {
		qs[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	if _, err := db.Exec("CREATE VIEW events AS SELECT * FROM read_parquet([" + strings.Join(qs, ", ") + "], hive_partitioning = false, union_by_name = true)"); err != nil {
		return err
	}
	rows, err := db.Query(q)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		fmt.Println(vals...)
	}
	return rows.Err()
}
