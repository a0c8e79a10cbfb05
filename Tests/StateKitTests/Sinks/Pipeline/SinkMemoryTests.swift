import Foundation
import Testing

/// Everything a released synced container made is freed within its drain timeout plus one second,
/// whatever the rate at which containers come and go (semantics 24), read from the allocator.
///
/// The containers are made in `statekit-sinks-helper memory-churn`, a process of its own: its
/// allocator counts nothing but them, whatever the rest of the suite allocates meanwhile. It reads
/// the memory in use after 20,000 containers and again after 20,000 more. Linux only (glibc's
/// `malloc_info`), and not under ThreadSanitizer, whose allocator glibc does not see.
#if canImport(Glibc)
@Suite(.timeLimit(.minutes(3))) struct SinkMemoryTests {
    /// 2 MB: 50 bytes per container of the 40,000, so anything each one left behind (a pipeline,
    /// its task, a timer: hundreds of bytes) fails, while what the process keeps for all of them
    /// (a thread's cache, a table's capacity) fits many times over.
    static let bound = 2_000_000

    @Test(.disabled(if: isThreadSanitized, "ThreadSanitizer's allocator replaces glibc's, which would count nothing"))
    func twentyAndFortyThousandReleasedSyncedContainersGiveTheirMemoryBack() async throws {
        let child = try await SinksHelper.launch(["memory-churn", "-", uniqueKey(), "20000,40000", "\(Self.bound)"])
        await child.waitForExit(seconds: 150)
        #expect(child.firstLine.hasPrefix("baseline "), "\(child.firstLine)")
        let results = child.laterLines.map { $0.split(separator: " ").compactMap { Int($0) } }
        #expect(results.map(\.first) == [20_000, 40_000], "\(child.laterLines)")
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
