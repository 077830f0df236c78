// Command mutationscore reads the JSON report that gremlins writes (its -o
// flag) and prints, for each file, how many mutants the tests killed, how
// many lived, timed out, were not covered or did not compile, gremlins'
// efficacy and the share of mutants detected; then the surviving mutants
// not listed as equivalent. scripts/mutation runs it; see docs/testing.md.
//
// Usage:
//
//	mutationscore -report FILE -dir DIR [-equivalent FILE] [-retest]
//
// DIR is the folder, relative to the repository's root, that gremlins ran
// in: the report names files relative to it, and the output relative to
// the root. The equivalent mutants file holds one mutant a line,
//
//	resiliencehttp/call.go:120:9 CONDITIONALS_BOUNDARY — why no behaviour changes
//
// with blank lines and lines starting with # ignored. A survivor (lived or
// not covered) listed there is not reported again; an entry for a file of
// the report that matches no survivor is reported as stale, as happens
// when the code it names has moved.
//
// With -retest, each mutant the report calls not covered or timed out is
// tested here, in a copy of the module (see retest.go): gremlins calls
// every mutant of a switch case's expression not covered, whether the
// tests run it or not, and times a mutant out at three times the duration
// of its coverage run, which the build of a mutant on a busy machine can
// take. It also builds each mutant the report calls killed: gremlins
// counts a mutant that does not compile as killed.
//
// The exit status is 0 when every survivor is listed, 1 when some are not,
// and 2 when the report or the list cannot be read.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// report is the part of gremlins' JSON report this command reads.
type report struct {
	Files []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

// mutant names one mutation: its file relative to the repository's root,
// its position and its mutator.
type mutant struct {
	file      string
	line, col int
	mutator   string
}

func (m mutant) String() string {
	return fmt.Sprintf("%s:%d:%d %s", m.file, m.line, m.col, m.mutator)
}

// score counts one file's mutants by status.
type score struct {
	file                                           string
	killed, lived, timedOut, notCovered, notViable int
	equivalent                                     int // survivors listed as equivalent
}

// efficacy is gremlins' figure: killed over killed and lived.
func (s score) efficacy() float64 { return percent(s.killed, s.killed+s.lived) }

// detected is the share of the mutants that compile which a test detects,
// by failing or by running out of time; mutants no test reaches count as
// undetected.
func (s score) detected() (n, of int) {
	return s.killed + s.timedOut, s.killed + s.timedOut + s.lived + s.notCovered
}

func percent(n, of int) float64 {
	if of == 0 {
		return 100
	}
	return 100 * float64(n) / float64(of)
}

// survivor is a mutant no test detected, with its status.
type survivor struct {
	mutant
	status string
}

// result is what a report says once the equivalent mutants are known.
type result struct {
	scores []score
	new    []survivor // survivors not listed as equivalent
	stale  []mutant   // listed mutants of the report's files that did not survive
}

// count adds a mutant of status to the score, and reports whether it
// survived.
func (s *score) count(status string) (survived bool) {
	switch status {
	case "KILLED":
		s.killed++
	case "TIMED OUT":
		s.timedOut++
	case "NOT VIABLE":
		s.notViable++
	case "LIVED":
		s.lived++
		return true
	case "NOT COVERED":
		s.notCovered++
		return true
	}
	return false
}

// judge scores the report rep, whose file names are relative to dir, with
// the equivalent mutants equiv.
func judge(rep report, dir string, equiv map[mutant]bool) result {
	var res result
	seen := make(map[mutant]bool)
	files := make(map[string]bool)
	for _, f := range rep.Files {
		s := score{file: path.Join(dir, f.Name)}
		files[s.file] = true
		for _, m := range f.Mutations {
			mu := mutant{file: s.file, line: m.Line, col: m.Column, mutator: m.Type}
			survived := s.count(m.Status)
			switch {
			case !survived:
			case equiv[mu]:
				s.equivalent++
				seen[mu] = true
			default:
				res.new = append(res.new, survivor{mu, m.Status})
			}
		}
		res.scores = append(res.scores, s)
	}
	for m := range equiv {
		if files[m.file] && !seen[m] {
			res.stale = append(res.stale, m)
		}
	}
	slices.SortFunc(res.scores, func(a, b score) int { return strings.Compare(a.file, b.file) })
	byPosition := func(a, b mutant) int {
		if c := strings.Compare(a.file, b.file); c != 0 {
			return c
		}
		if a.line != b.line {
			return a.line - b.line
		}
		if a.col != b.col {
			return a.col - b.col
		}
		return strings.Compare(a.mutator, b.mutator)
	}
	slices.SortFunc(res.new, func(a, b survivor) int { return byPosition(a.mutant, b.mutant) })
	slices.SortFunc(res.stale, byPosition)
	return res
}

// parseEquivalent reads the list of equivalent mutants: one a line,
// "path:line:column MUTATOR — reason".
func parseEquivalent(r io.Reader) (map[mutant]bool, error) {
	equiv := make(map[mutant]bool)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m, err := parseEntry(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if equiv[m] {
			return nil, fmt.Errorf("line %d: %v listed twice", n, m)
		}
		equiv[m] = true
	}
	return equiv, sc.Err()
}

func parseEntry(line string) (mutant, error) {
	what, why, ok := strings.Cut(line, "—")
	if !ok || strings.TrimSpace(why) == "" {
		return mutant{}, errors.New(`want "path:line:column MUTATOR — reason"`)
	}
	fields := strings.Fields(what)
	if len(fields) != 2 {
		return mutant{}, fmt.Errorf("want a position and a mutator before the dash, have %q", strings.TrimSpace(what))
	}
	pos := strings.Split(fields[0], ":")
	if len(pos) != 3 {
		return mutant{}, fmt.Errorf("want path:line:column, have %q", fields[0])
	}
	ln, err1 := strconv.Atoi(pos[1])
	col, err2 := strconv.Atoi(pos[2])
	if err1 != nil || err2 != nil || ln < 1 || col < 1 {
		return mutant{}, fmt.Errorf("want a line and a column counted from 1, have %q", fields[0])
	}
	return mutant{file: path.Clean(pos[0]), line: ln, col: col, mutator: fields[1]}, nil
}

// print writes the table and the lists of res to w.
func (res result) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "file\tkilled\tlived\ttimed out\tnot covered\tnot viable\tequivalent\tefficacy\tdetected\t")
	for _, s := range res.scores {
		n, of := s.detected()
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f%%\t%d/%d %.1f%%\t\n",
			s.file, s.killed, s.lived, s.timedOut, s.notCovered, s.notViable, s.equivalent,
			s.efficacy(), n, of, percent(n, of))
	}
	tw.Flush()
	if len(res.new) == 0 {
		fmt.Fprintln(w, "\nevery surviving mutant is listed as equivalent")
	} else {
		fmt.Fprintf(w, "\n%d surviving mutants not listed as equivalent:\n", len(res.new))
		for _, s := range res.new {
			fmt.Fprintf(w, "  %v (%s)\n", s.mutant, strings.ToLower(s.status))
		}
	}
	if len(res.stale) > 0 {
		fmt.Fprintf(w, "\n%d mutants listed as equivalent did not survive here (moved, or now detected):\n", len(res.stale))
		for _, m := range res.stale {
			fmt.Fprintf(w, "  %v\n", m)
		}
	}
}

func main() {
	reportFile := flag.String("report", "", "gremlins' JSON report")
	dir := flag.String("dir", ".", "the folder gremlins ran in, relative to the repository's root")
	equivFile := flag.String("equivalent", "", "the list of equivalent mutants (none if empty)")
	retest := flag.Bool("retest", false, "test the mutants gremlins reports as not covered or timed out")
	flag.Parse()
	if *reportFile == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	res, err := run(*reportFile, path.Clean(*dir), *equivFile, *retest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutationscore:", err)
		os.Exit(2)
	}
	res.print(os.Stdout)
	if len(res.new) > 0 {
		os.Exit(1)
	}
}

func run(reportFile, dir, equivFile string, retest bool) (result, error) {
	b, err := os.ReadFile(reportFile)
	if err != nil {
		return result{}, err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return result{}, fmt.Errorf("%s: %w", reportFile, err)
	}
	equiv := map[mutant]bool{}
	if equivFile != "" {
		f, err := os.Open(equivFile)
		if err != nil {
			return result{}, err
		}
		defer f.Close()
		if equiv, err = parseEquivalent(f); err != nil {
			return result{}, fmt.Errorf("%s: %w", equivFile, err)
		}
	}
	if retest {
		if err := retestUncovered(rep, dir); err != nil {
			return result{}, err
		}
	}
	return judge(rep, dir, equiv), nil
}

// retestUncovered tests every mutant of rep that gremlins reports as not
// covered or timed out, builds every one it reports killed, and sets
// their statuses.
func retestUncovered(rep report, dir string) error {
	var r *retester
	for _, f := range rep.Files {
		for i, m := range f.Mutations {
			test := m.Status == "NOT COVERED" || m.Status == "TIMED OUT"
			if !test && m.Status != "KILLED" {
				continue
			}
			if r == nil {
				fmt.Fprintln(os.Stderr, "--- testing again the mutants gremlins reports as not covered or timed out; building those it reports killed")
				var err error
				if r, err = newRetester(dir, os.Stderr); err != nil {
					return err
				}
				defer r.close()
			}
			mu := mutant{file: path.Join(dir, f.Name), line: m.Line, col: m.Column, mutator: m.Type}
			status, err := r.status(mu, test)
			if err != nil {
				return err
			}
			if test || status != m.Status {
				fmt.Fprintf(os.Stderr, "%12s %v\n", status, mu)
			}
			f.Mutations[i].Status = status
		}
	}
	return nil
}
