package resilience

// checkOption panics if o, an option given to the constructor fn, is nil
// (a nil interface, or a nil pointer, function or channel in one) or the zero
// [Option], whose set function is nil: an Option{} written by hand rather
// than made by [WithClock], [WithObserver] or [WithName]. Either would
// otherwise crash later with a nil dereference that names nothing.
func checkOption(fn string, o any) {
	if isNil(o) {
		panic("resilience: " + fn + ": option is " + nilName(o))
	}
	if o, ok := o.(Option); ok && o.set == nil {
		panic("resilience: " + fn + ": option is a zero resilience.Option (make one with WithClock, WithObserver, WithName or WithRand)")
	}
}
