import Foundation
import StateKit

#if canImport(Glibc)
import Glibc
#endif

/// Measures what the allocator still holds after synced containers are made, written once and
/// released in a loop (see SinkMemoryTests): a process of its own, so nothing else allocates.
enum MemoryChurn {
    /// The drain timeout of every container's sink: what the memory is given, plus one second,
    /// to come back.
    static let drainTimeout = Duration.milliseconds(250)

    /// Bytes the allocator has handed out and not had back, small blocks and mapped ones, summed
    /// over its arenas: what `mallinfo2()` calls `uordblks + hblkhd`. Read from `malloc_info`,
    /// found at run time, since Swift's Glibc module does not import `malloc.h`; `nil` elsewhere.
    static func bytesInUse() -> Int? {
        #if canImport(Glibc)
        typealias MallocInfo = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_info") else { return nil }
        var buffer: UnsafeMutablePointer<CChar>?
        var length = 0
        guard let stream = open_memstream(&buffer, &length) else { return nil }
        let status = unsafeBitCast(symbol, to: MallocInfo.self)(0, stream)
        fclose(stream)
        defer { free(buffer) }
        guard status == 0, let buffer else { return nil }
        // The totals over every arena follow the last arena's `</heap>`.
        let xml = String(cString: buffer)
        guard let totals = xml.range(of: "</heap>", options: .backwards).map({ xml[$0.upperBound...] }) else {
            return nil
        }
        func size(_ element: String) -> Int? {
            guard let start = totals.range(of: "<\(element) ")?.upperBound,
                let attribute = totals[start...].range(of: "size=\"")?.upperBound,
                let end = totals[attribute...].firstIndex(of: "\"")
            else { return nil }
            return Int(totals[attribute..<end])
        }
        guard let arenas = size("system type=\"current\""), let fast = size("total type=\"fast\""),
            let rest = size("total type=\"rest\""), let mapped = size("total type=\"mmap\"")
        else { return nil }
        return arenas - fast - rest + mapped
        #else
        return nil
        #endif
    }

    /// What each container's sink does with a batch.
    enum Sink: String {
        /// Takes it.
        case healthy
        /// Fails, and is paused for 30 s after its first attempt: the drain timeout stops it in
        /// that pause.
        case pausing

        func make() -> ClosureSink<Int> {
            var policy = SinkPolicy.default
            policy.drainTimeout = drainTimeout
            switch self {
            case .healthy:
                return ClosureSink(policy: policy) { _ in }
            case .pausing:
                policy.retry = RetryPolicy(maximumAttempts: 1)
                policy.afterRepeatedFailures = .pauseAndKeep(retryEvery: .seconds(30))
                return ClosureSink(policy: policy) { _ in throw CancellationError() }
            }
        }
    }

    /// Makes `count` containers, each with its own key and one sink, writes each once and releases
    /// it at once.
    static func churn(_ count: Int, key: String, from first: Int, sink: Sink) {
        for index in first..<first + count {
            let state = SyncedState(0, key: "\(key)-\(index)", sinks: [sink.make()])
            state.modify(1)
        }
    }

    /// Polls until at most `bound` bytes above `baseline` are in use, for at most the drain
    /// timeout plus one second. Returns the bytes above the baseline at the end and the
    /// milliseconds it took.
    static func settle(above baseline: Int, within bound: Int) -> (excess: Int, milliseconds: Int) {
        let start = ContinuousClock.now
        let deadline = start + drainTimeout + .seconds(1)
        var excess = (bytesInUse() ?? 0) - baseline
        while excess > bound && ContinuousClock.now < deadline {
            usleep(20_000)
            excess = (bytesInUse() ?? 0) - baseline
        }
        let elapsed = (ContinuousClock.now - start).components
        return (excess, Int(elapsed.seconds * 1_000 + elapsed.attoseconds / 1_000_000_000_000_000))
    }

    /// Prints `baseline <bytes>`, then a line for each total: `<total> <peak> <excess>
    /// <milliseconds>`, the bytes above the baseline once `total` containers were made (the
    /// earlier totals' included) and released, right after the last release and once settled (or
    /// at the deadline), and how long settling took.
    static func run(key: String, totals: [Int], bound: Int, sink: Sink) {
        guard bytesInUse() != nil else {
            FileHandle.standardOutput.write(Data("unsupported\n".utf8))
            return
        }
        StateDiagnostics.handler = { _ in }
        // What the first containers make once for all (threads, type metadata) is not theirs.
        churn(500, key: "\(key)-warm-up", from: 0, sink: sink)
        Thread.sleep(forTimeInterval: drainTimeout.inSeconds + 1)
        let baseline = bytesInUse() ?? 0
        FileHandle.standardOutput.write(Data("baseline \(baseline)\n".utf8))
        var made = 0
        for total in totals where total > made {
            churn(total - made, key: key, from: made, sink: sink)
            made = total
            let peak = (bytesInUse() ?? 0) - baseline
            let (excess, milliseconds) = settle(above: baseline, within: bound)
            FileHandle.standardOutput.write(Data("\(total) \(peak) \(excess) \(milliseconds)\n".utf8))
        }
    }
}

extension Duration {
    fileprivate var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
