package evals

// Trial is what n repeats of a scenario, c of which passed, say about k
// attempts.
//
// PassAtK estimates pass@k, the chance that at least one of k attempts
// passes, with the unbiased estimator of Chen et al. 2021 ("Evaluating
// Large Language Models Trained on Code", the HumanEval paper):
//
//	pass@k = 1 - C(n-c, k) / C(n, k)
//
// the share of the k-subsets of the n runs that hold at least one pass.
//
// PassHatK estimates pass^k, the chance that all k attempts pass (the
// reliability figure of tau-bench, Yao et al. 2024), with the matching
// unbiased estimator
//
//	pass^k = C(c, k) / C(n, k)
//
// the share of the k-subsets that hold only passes. pass@1 = pass^1 = c/n.
// Both are for runs drawn independently from one scenario; k <= n.
type Trial struct {
	K        int     `json:"k"`
	PassAtK  float64 `json:"pass_at_k"`
	PassHatK float64 `json:"pass_hat_k"`
}

// Trials gives pass@k and pass^k for k = 1..n, for n >= 2 runs of which c
// passed; nil for fewer runs (one run says only pass or fail).
func Trials(n, c int) []Trial {
	if n < 2 || c < 0 || c > n {
		return nil
	}
	out := make([]Trial, 0, n)
	for k := 1; k <= n; k++ {
		out = append(out, Trial{K: k, PassAtK: 1 - choose(n-c, k)/choose(n, k), PassHatK: choose(c, k) / choose(n, k)})
	}
	return out
}

// choose is the binomial coefficient C(n, k) as a float64 (0 when k > n).
// Each step's partial product is C(n-k+i, i), an integer, so the result is
// exact while it is below 2^53 (n up to about 50 for every k) and a close
// float beyond.
func choose(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	k = min(k, n-k)
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
