import Foundation
import StateKit

/// Checks that the storages `makeStorage` returns keep the ``StateKit/StateStorage`` contract: run
/// it in your storage's own tests, as StateKit runs it for its own storages.
///
/// `makeStorage` is called twice; when both storages report the same
/// ``StateKit/StateStorage/location``, they must share their keys (a second launch, or a second
/// object over the same place). The check writes only keys starting with `"contract-check"`, and
/// removes them. It checks that:
/// - ``StateKit/StateStorage/location`` is not empty and reads the same every time;
/// - ``StateKit/StateStorage/load(forKey:)`` returns `nil` for a key never saved, and exactly the
///   bytes last saved otherwise (empty, binary and 1 MB values included);
/// - keys with `/`, `:`, `.`, spaces, `%` and non-ASCII letters are kept apart (the mapping is
///   injective);
/// - ``StateKit/StateStorage/remove(forKey:)`` empties a key and does nothing for a missing one;
/// - ``StateKit/StateStorage/moveValue(forKey:toKey:)`` moves the bytes and empties the source;
/// - two storages at the same location see each other's saves;
/// - saves from 8 threads at once to one key leave one of the saved values, whole (atomic), and
///   to distinct keys lose none.
///
/// ```swift
/// @Test func keychainStorageKeepsTheContract() async throws {
///     try await checkStateStorageContract { KeychainStorage(service: "tests") }
/// }
/// ```
///
/// - Parameter makeStorage: Makes the storage under test.
/// - Throws: ``ContractViolation`` listing every requirement the storage broke.
public func checkStateStorageContract(_ makeStorage: () throws -> any StateStorage) async throws {
    let storage = try makeStorage()
    var report = ContractReport(contract: "StateStorage", subject: storage.location)
    let prefix = "contract-check"
    report.require(storage.location.isEmpty ? "location: is empty" : nil)
    report.require(storage.location == storage.location ? nil : "location: changes from one read to the next")

    await report.require("load of a key never saved") {
        try storage.load(forKey: "\(prefix).missing") == nil ? nil : "load of a key never saved is not nil"
    }
    let samples: [(String, Data)] = [
        ("empty", Data()),
        ("text", Data("hello".utf8)),
        ("binary", Data((0...255).map { UInt8($0) })),
        ("large", Data((0..<1_048_576).map { UInt8(truncatingIfNeeded: $0 &* 31) })),
    ]
    for (name, bytes) in samples {
        await report.require("round trip of \(name) bytes") {
            try storage.save(bytes, forKey: "\(prefix).\(name)")
            return try storage.load(forKey: "\(prefix).\(name)") == bytes
                ? nil : "load does not return the \(name) bytes saved (\(bytes.count) bytes)"
        }
    }
    await report.require("overwrite") {
        try storage.save(Data("first".utf8), forKey: "\(prefix).overwrite")
        try storage.save(Data("second".utf8), forKey: "\(prefix).overwrite")
        return try storage.load(forKey: "\(prefix).overwrite") == Data("second".utf8)
            ? nil : "a second save does not replace the first"
    }
    let awkward = ["a/b", "a_b", "a:b", "a b", "a%2Fb", "a.b", "a..b", "A/B", "café", "../a"]
    await report.require("keys map injectively") {
        for (index, key) in awkward.enumerated() { try storage.save(Data([UInt8(index)]), forKey: "\(prefix).\(key)") }
        for (index, key) in awkward.enumerated() {
            let loaded = try storage.load(forKey: "\(prefix).\(key)")
            if loaded != Data([UInt8(index)]) {
                let other = loaded.flatMap { $0.first }.map { Int($0) }.flatMap {
                    awkward.indices.contains($0) ? awkward[$0] : nil
                }
                return "'\(key)' reads \(other.map { "the bytes of '\($0)'" } ?? "\(String(describing: loaded))")"
            }
        }
        return nil
    }
    await report.require("remove") {
        try storage.remove(forKey: "\(prefix).text")
        try storage.remove(forKey: "\(prefix).never-saved")
        return try storage.load(forKey: "\(prefix).text") == nil ? nil : "remove leaves the bytes"
    }
    await report.require("moveValue") {
        try storage.save(Data("moved".utf8), forKey: "\(prefix).from")
        try storage.moveValue(forKey: "\(prefix).from", toKey: "\(prefix).to")
        let source = try storage.load(forKey: "\(prefix).from")
        let destination = try storage.load(forKey: "\(prefix).to")
        return source == nil && destination == Data("moved".utf8)
            ? nil
            : "moveValue leaves \(String(describing: source)) at the source and \(String(describing: destination))"
    }
    let second = try makeStorage()
    if second.location == storage.location {
        await report.require("two storages at one location") {
            try storage.save(Data("shared".utf8), forKey: "\(prefix).shared")
            return try second.load(forKey: "\(prefix).shared") == Data("shared".utf8)
                ? nil : "a second storage at \(storage.location) does not see the first one's save"
        }
    }
    let failures = ConcurrentFailures()
    let values = (0..<8).map { thread in Data(repeating: UInt8(thread), count: 65_536) }
    await onThreads(8) { thread in
        for round in 0..<20 {
            do {
                try storage.save(values[thread], forKey: "\(prefix).contended")
                try storage.save(Data([UInt8(thread), UInt8(round)]), forKey: "\(prefix).thread-\(thread)")
            } catch {
                failures.append("concurrent save threw \(error)")
            }
        }
    }
    await report.require("concurrent saves") {
        if let first = failures.all.first { return first }
        let contended = try storage.load(forKey: "\(prefix).contended")
        guard let contended, values.contains(contended) else {
            return "after concurrent saves to one key, it holds a mix or nothing (\(contended?.count ?? 0) bytes)"
        }
        for thread in 0..<8 where try storage.load(forKey: "\(prefix).thread-\(thread)") != Data([UInt8(thread), 19]) {
            return "a concurrent save to a key of its own was lost (thread \(thread))"
        }
        return nil
    }
    for key in ["missing", "empty", "binary", "large", "overwrite", "to", "shared", "contended"]
        + awkward + (0..<8).map({ "thread-\($0)" })
    {
        try? storage.remove(forKey: "\(prefix).\(key)")
    }
    try report.finish()
}

/// Runs `body` on `count` threads at once, without holding a thread of Swift concurrency's pool.
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread {
                body(index)
                group.leave()
            }.start()
        }
        group.notify(queue: .global()) { continuation.resume() }
    }
}

/// Failures collected from several threads.
private final class ConcurrentFailures: Sendable {
    private let failures = LockedBox<[String]>([])

    func append(_ failure: String) { failures.withLock { $0.append(failure) } }

    var all: [String] { failures.withLock { $0 } }
}
