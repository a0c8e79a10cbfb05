import Foundation
import StateKit

/// Everything the page shows at one moment, as the JSON `/api/state` answers.
struct InspectorSnapshot: Encodable {
    struct Container: Encodable {
        struct Storage: Encodable {
            let location: String?
            let isPersisting: Bool
            let loadError: String?
            let saveError: String?
        }

        struct Sync: Encodable {
            struct Destination: Encodable {
                let name: String
                let pending: Int
                let sent: Int
                let failed: Int
                let dropped: Int
                let isPaused: Bool
                let lastError: String?
                let isAwaitingFirstContact: Bool
            }

            let isSynced: Bool
            let pending: Int
            let isPaused: Bool
            let lastError: String?
            let lastDeliveredAt: Date?
            let destinations: [Destination]
        }

        let id: String
        let key: String
        let type: String
        let version: UInt64
        let value: String
        let valueIsJSON: Bool
        let subscribers: Int
        let storage: Storage?
        let sync: Sync?
        let historyIDs: [String]
    }

    struct History: Encodable {
        let id: String
        let keys: [String]
        let canUndo: Bool
        let canRedo: Bool
        /// The keys each step changed, oldest first.
        let undoSteps: [[String]]
        let redoSteps: [[String]]
    }

    let containers: [Container]
    let histories: [History]

    /// Reads every listed container (one per cell) and every history.
    static func take(of registry: InspectionRegistry = .shared) -> InspectorSnapshot {
        let histories = registry.histories.map { history in
            let steps = history.stepKeys
            return History(
                id: identifier(of: history), keys: history.trackedKeys, canUndo: history.canUndo,
                canRedo: history.canRedo, undoSteps: steps.undo, redoSteps: steps.redo)
        }
        var seen = Set<ObjectIdentifier>()
        var containers: [Container] = []
        for container in registry.handles where seen.insert(container.cellIdentity).inserted {
            guard let reading = container.readTally(clearing: false) else { continue }
            let details = container.details()
            let rendered = RenderedValue(reading.value)
            containers.append(
                Container(
                    id: identifier(of: container), key: container.key, type: container.valueTypeName,
                    version: reading.version, value: rendered.text, valueIsJSON: rendered.isJSON,
                    subscribers: reading.subscriberCount, storage: storage(in: details), sync: sync(in: details),
                    historyIDs: histories.filter { $0.keys.contains(container.key) }.map(\.id)))
        }
        return InspectorSnapshot(containers: containers, histories: histories)
    }

    /// The JSON the page reads.
    func json() -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }

    /// A container's or a history's identifier in the page: its cell's, so that the containers of
    /// one persisted key are one row.
    static func identifier(of container: InspectionHandle) -> String {
        String(UInt(bitPattern: container.cellIdentity.hashValue), radix: 16)
    }

    static func identifier(of history: StateHistory) -> String {
        String(UInt(bitPattern: ObjectIdentifier(history).hashValue), radix: 16)
    }

    private static func storage(in details: InspectionDetails?) -> Container.Storage? {
        guard let details, details.storageLocation != nil || details.isPersisting || details.loadError != nil else {
            return nil
        }
        return Container.Storage(
            location: details.storageLocation, isPersisting: details.isPersisting,
            loadError: details.loadError.map { "\($0)" }, saveError: details.saveError.map { "\($0)" })
    }

    private static func sync(in details: InspectionDetails?) -> Container.Sync? {
        guard let status = details?.syncStatus else { return nil }
        return Container.Sync(
            isSynced: status.isSynced, pending: status.pending, isPaused: status.isPaused, lastError: status.lastError,
            lastDeliveredAt: status.lastDeliveredAt,
            destinations: status.sinks.map {
                .init(
                    name: $0.sinkName, pending: $0.pending, sent: $0.sent, failed: $0.failed, dropped: $0.dropped,
                    isPaused: $0.isPaused, lastError: $0.lastError, isAwaitingFirstContact: $0.isAwaitingFirstContact)
            })
    }
}
