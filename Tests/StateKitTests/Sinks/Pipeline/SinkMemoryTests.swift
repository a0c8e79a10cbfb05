import Foundation
import Testing

/// Everything a released synced container made is freed within its drain timeout plus one second,
/// whatever the rate at which containers come and go (semantics 24), read from the allocator.
///
/// The containers are made in `statekit-sinks-helper memory-churn`, a process of its own: its
/// allocator counts nothing but them, whatever the rest of the suite allocates meanwhile. Linux
/// only (glibc's `malloc_info`), and not under ThreadSanitizer, whose allocator glibc does not see.
#if canImport(Glibc)
@Suite(.timeLimit(.minutes(3))) struct SinkMemoryTests {
    /// 2 MB: 50 bytes per container of 40,000 (200 of 10,000), so anything each one left behind (a
    /// pipeline, its task, a timer: hundreds of bytes) fails, while what the process keeps for all
    /// of them (a thread's cache, a table's capacity) fits many times over.
    static let bound = 2_000_000

    /// The memory in use after 20,000 containers whose sink takes every batch, and again after
    /// 20,000 more; and after 10,000 whose sink failed and is paused for 30 s when its drain
    /// timeout stops it.
    @Test(
        .disabled(if: isThreadSanitized, "ThreadSanitizer's allocator replaces glibc's, which would count nothing"),
        arguments: [("healthy", "20000,40000"), ("pausing", "10000")])
    func releasedSyncedContainersGiveTheirMemoryBack(sink: String, totals: String) async throws {
        let child = try await SinksHelper.launch(
            ["memory-churn", "-", uniqueKey(), totals, "\(Self.bound)", sink])
        await child.waitForExit(seconds: 150)
        #expect(child.firstLine.hasPrefix("baseline "), "\(child.firstLine)")
        let results = child.laterLines.map { $0.split(separator: " ").compactMap { Int($0) } }
        #expect(results.map(\.first) == totals.split(separator: ",").map { Int($0) }, "\(child.laterLines)")
        for result in results where result.count == 4 {
            let (made, peak, excess, milliseconds) = (result[0], result[1], result[2], result[3])
            // The helper's sinks drain for 250 ms: their memory is due back 1.25 s after the last release.
            #expect(
                excess <= Self.bound,
                """
                \(made) containers: \(peak) bytes above the baseline after the last release, \(excess) \
                (\(excess / made) per container) \(milliseconds) ms later
                """)
        }
    }
}
#endif
