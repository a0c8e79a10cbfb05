import StateKit
import Testing

/// A test trait that runs each test with a fresh in-memory storage in place of every persisted
/// container's own (see `withStateStorage(_:operation:)`): a test that creates the app's models
/// never writes to the real App Group directory or `UserDefaults`, and no test sees another's
/// values.
///
/// ```swift
/// @Suite(.inMemoryStateStorage) struct TrackerTests {
///     @Test func addingAHabitKeepsIt() {
///         let tracker = PersistedState([String](), key: "tracker", storage: .userDefaults())
///         tracker.modify { $0.append("water") }
///         #expect(tracker.value == ["water"])
///     }
/// }
/// ```
///
/// On a suite it applies to every test in it, each test with its own storage.
public struct InMemoryStateStorageTrait: TestTrait, SuiteTrait, TestScoping {
    /// Every test of a suite gets it.
    public var isRecursive: Bool { true }

    /// Runs `function` inside `withStateStorage` with a new ``StateKit/InMemoryStateStorage``.
    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil || !test.isSuite else { return try await function() }
        try await withStateStorage(InMemoryStateStorage()) { try await function() }
    }
}

extension Trait where Self == InMemoryStateStorageTrait {
    /// Runs each test with a fresh in-memory storage in place of every persisted container's own.
    public static var inMemoryStateStorage: Self { Self() }
}
