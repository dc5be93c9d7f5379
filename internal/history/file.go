package history

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/agentctl/agentctl/internal/vfs"
)

// RowGroupRows is the most rows one row group of a file holds. DuckDB reads
// row groups in parallel, so a large segment is split into several.
const RowGroupRows = 128 * 1024

// WriteRows writes rows to a new Parquet file at path, atomically: a temp
// file in the same directory is written, closed (which writes the footer),
// fsync'd and renamed over path, then the directory is fsync'd. Columns are
// zstd-compressed. An empty rows writes a valid file with no rows.
func WriteRows(path string, rows []Row, noSync bool) (size int64, err error) {
	return WriteRowsFS(vfs.OS, path, rows, noSync)
}

// WriteRowsFS is WriteRows on fsys. On failure the temp file is removed
// (as far as fsys lets it be) and path is untouched.
func WriteRowsFS(fsys vfs.FS, path string, rows []Row, noSync bool) (size int64, err error) {
	size, _, err = writeRows(fsys, path, rows, noSync)
	return size, err
}

// writeRows is WriteRowsFS that also returns the file's checksum (see
// FileSum), taken from the bytes as they are written.
func writeRows(fsys vfs.FS, path string, rows []Row, noSync bool) (size int64, sum string, err error) {
	return writeFile(fsys, path, rows, noSync)
}

// WriteRowsEachFS is WriteRowsFS for rows made a batch at a time: fill
// hands each batch to write, so a caller converting a long log holds a
// batch, not every row. The file is byte for byte the one WriteRowsFS
// writes of all the rows when every batch but the last is a multiple of
// 64 rows (parquet-go writes 64 rows at a time and ends pages only between
// them).
func WriteRowsEachFS(fsys vfs.FS, path string, fill func(write func([]Row) error) error, noSync bool) (size int64, err error) {
	size, _, err = writeFileEach(fsys, path, fill, noSync)
	return size, err
}

// writeFile is writeRows for rows of any of the history's schemas (Row,
// EvalRow).
func writeFile[T any](fsys vfs.FS, path string, rows []T, noSync bool) (size int64, sum string, err error) {
	return writeFileEach(fsys, path, func(write func([]T) error) error { return write(rows) }, noSync)
}

// writeFileEach is writeFile with the rows handed over by fill, a batch
// at a time.
func writeFileEach[T any](fsys vfs.FS, path string, fill func(write func([]T) error) error, noSync bool) (size int64, sum string, err error) {
	dir := filepath.Dir(path)
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return 0, "", fmt.Errorf("history: write %s: %w", path, err)
	}
	f, err := vfs.CreateAtomic(fsys, path, 0o600, noSync)
	if err != nil {
		return 0, "", fmt.Errorf("history: write %s: %w", path, err)
	}
	defer f.Abort()
	sum32 := crc32.New(castagnoli) // parquet-go writes the file front to back
	w := parquet.NewGenericWriter[T](io.MultiWriter(f, sum32),
		parquet.Compression(codec),
		parquet.MaxRowsPerRowGroup(RowGroupRows),
		parquet.CreatedBy("agentctl", "", ""),
	)
	err = fill(func(rows []T) error {
		_, err := w.Write(rows)
		return err
	})
	if err != nil {
		return 0, "", fmt.Errorf("history: write %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return 0, "", fmt.Errorf("history: write %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return 0, "", fmt.Errorf("history: write %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return 0, "", fmt.Errorf("history: write %s: %w", path, err)
	}
	return st.Size(), sumString(sum32.Sum32()), nil
}

// RowWriter writes rows to a Parquet file a batch at a time, so that a
// caller converting a long log holds a batch, not every row. The file is
// written in place (no temp file, no fsync): it is for files of the
// caller's own, such as package query's rows of the unsealed logs.
type RowWriter struct {
	f    *os.File
	w    *parquet.GenericWriter[Row]
	rows int64
}

// CreateRows creates (or truncates) the file at path for a RowWriter.
func CreateRows(path string) (*RowWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history: write %s: %w", path, err)
	}
	w := parquet.NewGenericWriter[Row](f,
		parquet.Compression(codec),
		parquet.MaxRowsPerRowGroup(RowGroupRows),
		parquet.CreatedBy("agentctl", "", ""),
	)
	return &RowWriter{f: f, w: w}, nil
}

// Write adds rows; it keeps none of their strings. Not safe for
// concurrent use.
func (w *RowWriter) Write(rows []Row) error {
	if _, err := w.w.Write(rows); err != nil {
		return fmt.Errorf("history: write %s: %w", w.f.Name(), err)
	}
	w.rows += int64(len(rows))
	return nil
}

// Rows returns how many rows were written.
func (w *RowWriter) Rows() int64 { return w.rows }

// Close writes the footer and closes the file.
func (w *RowWriter) Close() error {
	err := w.w.Close()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("history: write %s: %w", w.f.Name(), err)
	}
	return nil
}

// ReadRows reads every row of a Parquet file written by WriteRows. A
// damaged file fails with an error matching ErrCorruptFile that names it.
func ReadRows(path string) ([]Row, error) {
	return readRowsSum(path, FileEntry{})
}

// readRowsSum is ReadRows of a live file, checked against what the
// manifest recorded of it (FileEntry.Verify) before it is parsed.
func readRowsSum(path string, f FileEntry) ([]Row, error) {
	// One read of the whole file: parquet-go would otherwise issue a read
	// per page and column, and history files are small or read whole.
	b, err := vfs.ReadRegular(path)
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", path, err)
	}
	if err := f.check(path, int64(len(b)), func() (string, error) { return sumString(crc32.Checksum(b, castagnoli)), nil }); err != nil {
		return nil, err
	}
	rows, err := readRows(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, &CorruptFileError{Path: path, Err: err}
	}
	return rows, nil
}

// ReadRowsEach reads every row of a Parquet file written by WriteRows,
// giving them to each a batch at a time (the slice is reused: each keeps
// none of it), so reading a file to check it whole holds one batch of
// rows, not the file's (a segment of 300,000 rows is ~400 MB decoded). A
// damaged file fails with an error matching ErrCorruptFile that names it;
// each's own error is returned as it is.
func ReadRowsEach(path string, each func([]Row) error) error {
	b, err := vfs.ReadRegular(path)
	if err != nil {
		return fmt.Errorf("history: read %s: %w", path, err)
	}
	var eachErr error
	err = readFileEach(bytes.NewReader(b), int64(len(b)), func(rows []Row) error {
		eachErr = each(rows)
		return eachErr
	})
	if err != nil && eachErr == nil {
		return &CorruptFileError{Path: path, Err: err}
	}
	return err
}

// readBatch is how many rows a streamed read decodes at a time.
const readBatch = 4096

func readFileEach[T any](r io.ReaderAt, size int64, each func([]T) error) (err error) {
	defer func() {
		// As readFile: a damaged file is an error, never a crash.
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed parquet: %v", p)
		}
	}()
	pf, err := parquet.OpenFile(r, size)
	if err != nil {
		return err
	}
	rd := parquet.NewGenericReader[T](pf)
	defer rd.Close()
	buf := make([]T, min(readBatch, max(pf.NumRows(), 1)))
	var read int64
	for {
		clear(buf)
		n, err := rd.Read(buf)
		if n > 0 {
			read += int64(n)
			if err := each(buf[:n]); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if read != pf.NumRows() {
		return fmt.Errorf("read %d of %d rows", read, pf.NumRows())
	}
	return nil
}

func readRows(r io.ReaderAt, size int64) (rows []Row, err error) {
	return readFile[Row](r, size)
}

// readAll reads every row of the Parquet file b.
func readAll[T any](b []byte) ([]T, error) { return readFile[T](bytes.NewReader(b), int64(len(b))) }

// readFile is readRows for rows of any of the history's schemas.
func readFile[T any](r io.ReaderAt, size int64) (rows []T, err error) {
	defer func() {
		// parquet-go may panic on some malformed input; a damaged file
		// must be an error, never a crash.
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed parquet: %v", p)
		}
	}()
	pf, err := parquet.OpenFile(r, size)
	if err != nil {
		return nil, err
	}
	rd := parquet.NewGenericReader[T](pf)
	defer rd.Close()
	rows = make([]T, pf.NumRows())
	n, err := rd.Read(rows)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if int64(n) != pf.NumRows() {
		return nil, fmt.Errorf("read %d of %d rows", n, pf.NumRows())
	}
	return rows, nil
}

// castagnoli is the CRC-32C table: the checksum of the log's frames too,
// and one that amd64 and arm64 compute in hardware (several GB/s).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileSum returns the checksum the manifest records of a history file
// (FileEntry.CRC32C): CRC-32C of its bytes, as 8 hex digits, read in one
// streaming pass.
func FileSum(path string) (string, error) {
	f, err := vfs.OpenRegular(path)
	if err != nil {
		return "", fmt.Errorf("history: checksum %s: %w", path, err)
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("history: checksum %s: %w", path, err)
	}
	return sumString(h.Sum32()), nil
}

func sumString(crc uint32) string { return fmt.Sprintf("%08x", crc) }

// Verify reports whether the live file f, under the history folder dir,
// has the size and checksum the manifest recorded: a *CorruptFileError
// naming it if not. A file the manifest records no checksum of (written
// by an agentctl before version 3 of the manifest) is not checked.
func (f FileEntry) Verify(dir string) error {
	if f.CRC32C == "" {
		return nil
	}
	p := filepath.Join(dir, filepath.FromSlash(f.Path))
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("history: verify %s: %w", p, err)
	}
	return f.check(p, st.Size(), func() (string, error) { return FileSum(p) })
}

// check compares a file's size, then its checksum (sum, computed only if
// the size matches), with f's.
func (f FileEntry) check(path string, size int64, sum func() (string, error)) error {
	if f.CRC32C == "" {
		return nil
	}
	if size != f.Bytes {
		return &CorruptFileError{Path: path, Err: fmt.Errorf("%d bytes, the manifest recorded %d", size, f.Bytes)}
	}
	got, err := sum()
	if err != nil {
		return err
	}
	if got != f.CRC32C {
		return &CorruptFileError{Path: path, Err: fmt.Errorf("checksum mismatch: crc32c %s, the manifest recorded %s", got, f.CRC32C)}
	}
	return nil
}

// Check reads the whole file at path and reports whether it is intact.
func Check(path string) error {
	_, err := ReadRows(path)
	return err
}

func syncDir(fsys vfs.FS, dir string, noSync bool) error {
	if noSync {
		return nil
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("history: sync dir %s: %w", dir, err)
	}
	return nil
}
