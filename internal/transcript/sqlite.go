package transcript

import (
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: no cgo beyond DuckDB's, no extension fetched at run time
)

// openSQLite opens a SQLite database read-only: an import never changes
// the source (a tool's live database included).
func openSQLite(path string) (*sql.DB, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&_pragma=busy_timeout(5000)&_pragma=query_only(1)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// sqliteTables lists the tables of the SQLite database at path, sorted.
func sqliteTables(path string) ([]string, error) {
	db, err := openSQLite(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	tables := []string{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		tables = append(tables, n)
	}
	return tables, rows.Err()
}

// SQLiteSidecar returns the database a file is the journal of (its
// -wal, -shm or -journal beside a SQLite database, as SQLite names them),
// or "": a folder's walk leaves it to the database, which SQLite reads
// with it.
func SQLiteSidecar(path string) string {
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		db, ok := strings.CutSuffix(path, suffix)
		if !ok {
			continue
		}
		f, err := openRegular(db)
		if err != nil {
			return ""
		}
		head := make([]byte, 16)
		n, _ := io.ReadFull(f, head)
		f.Close()
		if IsSQLite(head[:n]) {
			return db
		}
	}
	return ""
}
