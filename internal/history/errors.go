package history

import (
	"errors"
	"fmt"
)

// Errors reported by the history. Match them with errors.Is.
var (
	// ErrCorruptFile marks a Parquet file of the history that cannot be
	// read. The error is a *CorruptFileError naming the file.
	ErrCorruptFile = errors.New("history: corrupt parquet file")

	// ErrManifest means the manifest cannot be parsed or has a version
	// this agentctl does not read.
	ErrManifest = errors.New("history: bad manifest")
)

// CorruptFileError names a damaged Parquet file and what is wrong with it.
type CorruptFileError struct {
	Path string
	Err  error
}

func (e *CorruptFileError) Error() string {
	return fmt.Sprintf("history: corrupt parquet file %s: %v", e.Path, e.Err)
}

func (e *CorruptFileError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorruptFile.
func (e *CorruptFileError) Is(target error) bool { return target == ErrCorruptFile }
