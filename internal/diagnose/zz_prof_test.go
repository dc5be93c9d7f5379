package diagnose_test

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/agentctl/agentctl/internal/diagnose"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
)

func TestZZProf(t *testing.T) {
	if os.Getenv("ZZPROF") == "" {
		t.Skip()
	}
	st := recorder.Store{Root: "/tmp/h-mem-home"}
	id := "1000000000000000"
	f := diagnose.NewFold(id)
	a := replaycheck.NewAnchorer(id, nil)
	n := 0
	st.Stream(id, func(e session.Event) {
		a.Add(e)
		f.Add(e)
		n++
		if n == 999000 {
			runtime.GC()
			w, _ := os.Create("/tmp/h-mem-heap.prof")
			pprof.WriteHeapProfile(w)
			w.Close()
		}
	})
	f.Report(false, false, a.Report())
}
