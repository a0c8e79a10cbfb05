import Foundation
import StateKit
import StateKitTesting
import Testing

private struct OutOfRange: Error {}

/// `@Persisted` and `@Synced` take a validator as `@Stateful` does: a refused write is neither
/// stored, nor sent, nor silent.
@Suite struct PersistedAndSyncedValidatorTests {
    private static let rule: @Sendable (Int, Int) throws -> Void = { _, proposed in
        guard (0...10).contains(proposed) else { throw OutOfRange() }
    }

    @Test func persistedRefusesStoresNothingAndReports() throws {
        final class Settings: @unchecked Sendable {
            @Persisted var volume: Int
            init(key: String, storage: InMemoryStateStorage) {
                _volume = Persisted(
                    wrappedValue: 5, key: key, storage: storage, validator: PersistedAndSyncedValidatorTests.rule)
            }
        }
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let diagnostics = StateKitTesting.DiagnosticsRecorder(involving: key)
        let settings = Settings(key: key, storage: storage)
        settings.volume = 7
        settings.volume = 11
        settings.$volume.flush()
        #expect(settings.volume == 7)
        #expect(try storage.load(forKey: key) == Data("7".utf8))
        #expect(diagnostics.diagnostics.map(\.kind) == [.rejectedWrite])
        #expect(throws: RejectedWriteError.self) { try settings.$volume.set(-1) }
    }

    @Test func aValueFromAnotherContainerOfTheKeyIsValidatedToo() {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let diagnostics = StateKitTesting.DiagnosticsRecorder(involving: key)
        let guarded = PersistedState(5, key: key, storage: storage, validator: Self.rule)
        let unguarded = PersistedState(5, key: key, storage: storage)
        unguarded ~> 3
        #expect(guarded.value == 3)
        unguarded ~> 50
        #expect(guarded.value == 3)
        #expect(diagnostics.diagnostics.map(\.kind) == [.rejectedWrite])
    }

    @Test func syncedRefusesAndSendsNothing() async {
        final class Cart: @unchecked Sendable {
            @Synced var quantity: Int
            init(key: String, sink: RecordingSink<Int>) {
                _quantity = Synced(
                    wrappedValue: 1, key: key, sinks: [sink], validator: PersistedAndSyncedValidatorTests.rule)
            }
        }
        let key = uniqueKey()
        let diagnostics = StateKitTesting.DiagnosticsRecorder(involving: key)
        let sink = RecordingSink<Int>()
        let cart = Cart(key: key, sink: sink)
        cart.quantity = 2
        cart.quantity = 99
        await cart.$quantity.flush()
        #expect(cart.quantity == 2)
        #expect(sink.values == [2])
        #expect(diagnostics.diagnostics.map(\.kind) == [.rejectedWrite])
    }

    @Test func persistedSyncedStateTakesAValidatorToo() async throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let sink = RecordingSink<Int>()
        let state = SyncedState(0, key: key, storage: storage, sinks: [sink], validator: Self.rule)
        #expect(throws: RejectedWriteError.self) { try state.set(20) }
        try state.set(4)
        await state.flush()
        #expect(sink.values == [4])
        #expect(try storage.load(forKey: key) == Data("4".utf8))
    }
}
