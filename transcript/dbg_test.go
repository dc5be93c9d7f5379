package transcript

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestDebugAll(t *testing.T) {
	if os.Getenv("DBG") == "" {
		t.Skip()
	}
	filepath.Walk("../testdata/corpus/transcripts", func(p string, fi os.FileInfo, err error) error {
		if fi.IsDir() {
			return nil
		}
		f, derr := Detect(p)
		ss, err := Import(FormatAuto, p)
		fmt.Printf("== %s [%s %v] err=%v\n", p, f, derr, err)
		for _, s := range All(ss) {
			fmt.Printf("  %s %s counts=%v notrec=%v notes=%d\n", s.ID(), s.Report.Part, s.Report.Counts, s.Report.NotRecorded, len(s.Report.Notes))
			codes := map[string]int{}
			for _, n := range s.Report.Notes {
				codes[n.Code]++
				if n.Code != CodeSkipped {
					fmt.Printf("    note %d %s %s\n", n.Line, n.Code, n.Detail)
				}
			}
			fmt.Printf("    codes %v attrs %s\n", codes, clip(string(s.Events[0].Attrs), 300))
		}
		return nil
	})
}
