import Foundation
import StateKit
import Testing

/// The tests wait for their child processes off the cooperative pool: synchronous, each held one
/// of its two threads meanwhile, and under the sanitizer the suite's first minute stalled.
@Suite struct PersistenceProcessTests {
    @Test func valueWrittenByOneProcessIsReadByTheNext() async throws {
        try await offThePool(Self.writeThenRead)
    }

    private static func writeThenRead() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let value = "written by \(UUID().uuidString)"
        #expect(try TestHelperProcess.run(["write", directory.url.path, key, value]) == ["wrote"])
        #expect(try TestHelperProcess.run(["read", directory.url.path, key]) == [value])
        #expect(PersistedState("", key: key, storage: .file(directory.url)).value == value)
    }

    @Test func killedWriterAlwaysLeavesAFileThatDecodesToAWrittenValue() async throws {
        try await offThePool(Self.killWritersAndRead)
    }

    private static func killWritersAndRead() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let storage = FileStateStorage.file(directory.url)
        var lastOnDisk = 0
        for _ in 0..<4 {
            let writer = try TestHelperProcess(["write-loop", directory.url.path, key])
            #expect(writer.nextLine() == "loaded \(lastOnDisk)")
            var flushed = 0
            for _ in 0..<3 {
                let line = try #require(writer.nextLine())
                flushed = try #require(Int(line.dropFirst("flushed ".count)))
            }
            writer.kill()
            #expect(writer.process.terminationReason == .uncaughtSignal)

            let data = try #require(try storage.load(forKey: key))
            let stored = try JSONDecoder().decode([Int].self, from: data)
            #expect(stored.count == 2_000)
            #expect(Set(stored).count == 1)
            #expect(stored[0] >= flushed)
            lastOnDisk = stored[0]
        }
    }
}
