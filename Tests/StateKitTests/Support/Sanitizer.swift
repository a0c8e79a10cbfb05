#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Whether this test process runs under ThreadSanitizer (`swift test --sanitize=thread`), found by
/// its runtime's entry point. Code runs 5 to 15 times slower there, so liveness bounds measured in
/// wall-clock time scale with it (``slowCallBound``).
let isThreadSanitized: Bool = {
    #if canImport(Darwin)
    let everywhere = UnsafeMutableRawPointer(bitPattern: -2)
    #else
    let everywhere: UnsafeMutableRawPointer? = nil
    #endif
    return dlsym(everywhere, "__tsan_init") != nil
}()

/// The longest a single call may take under contention before a test calls it unbounded: far
/// above normal (a few milliseconds), and four times that under ThreadSanitizer, where one run
/// with a busy loop beside it measured 354 ms against the 250 ms that hold everywhere else.
let slowCallBound: Duration = isThreadSanitized ? .seconds(1) : .milliseconds(250)
