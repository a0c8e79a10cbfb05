import Foundation
import StateKit

/// What the page shows of a container that persists its value: where, and how its last save and
/// load went. ``StateKit/PersistedState`` and ``StateKit/SyncedState`` provide it.
protocol PersistenceDetails {
    /// Where the value is stored, or `nil` when the container does not say.
    var storageLocation: String? { get }
    var isPersisting: Bool { get }
    var loadError: (any Error)? { get }
    var saveError: (any Error)? { get }
}

/// What the page shows of a synced container: its ``StateKit/SyncStatus``.
protocol SyncDetails {
    var currentSyncStatus: SyncStatus { get }
}

extension PersistedState: PersistenceDetails {
    var storageLocation: String? {
        "\(type(of: storage)) \(storage.location)"
    }
}

extension SyncedState: PersistenceDetails where Value: Codable {
    var storageLocation: String? {
        nil
    }
}

extension SyncedState: SyncDetails {
    var currentSyncStatus: SyncStatus {
        syncStatus.value
    }
}
