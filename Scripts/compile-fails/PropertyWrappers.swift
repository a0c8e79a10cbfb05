// Habits on `$property` of @Stateful, @Persisted and @Synced, which is the container; see
// MonitoredState.swift.
import Dispatch
import Foundation
import StateKit

enum Theme: String, Codable, Equatable, Sendable { case light, dark }

struct Appearance: Codable, Equatable, Sendable {
    var theme = Theme.light
    var fontScale = 1.0
}

final class SettingsModel: @unchecked Sendable {
    @Stateful(key: "appearance") var appearance = Appearance()
    @Persisted(key: "fontScale", storage: .inMemory) var fontScale = 1.0
    @Synced(key: "theme", sinks: [LoggingSink()]) var theme = Theme.light
    var title = ""
}

func habits(model: SettingsModel) async throws {
    // Combine
    _ = model.$appearance.sink { print($0) }  // error: use subscribe(_:)
    _ = model.$fontScale.sink { print($0) }  // error: use subscribe(_:)
    _ = model.$theme.sink { print($0) }  // error: use subscribe(_:)
    _ = model.$appearance.theme.sink { print($0) }  // error: use subscribe(_:)
    _ = model.$theme.assign(to: \.theme, on: model)  // error: use subscribe(_:) and set the property in its handler
    _ = model.$fontScale.removeDuplicates()  // error: removingDuplicates(by:)
    _ = model.$appearance.eraseToAnyPublisher()  // error: `state.readOnly`
    _ = model.$theme.receive(on: DispatchQueue.main)  // error: subscribe(on: queue)
    model.$theme.send(.dark)  // error: use modify(_:) or `state ~> newValue`
    _ = model.$fontScale.publisher  // error: `$property` of @Stateful is already the container
    _ = model.$appearance.$value  // error: A container has no `$value`

    // swift-sharing
    model.$fontScale.withLock { $0 += 0.1 }  // error: use modify { $0 += 1 }
    model.$appearance.withLock { $0.fontScale += 0.1 }  // error: use modify { $0 += 1 }
    try await model.$fontScale.load()  // error: loads its stored value when it is created
    try await model.$fontScale.save()  // error: call flush()
    try await model.$theme.save()  // error: call flush()

    // Observation: `@Bindable`'s `$model.appearance.theme = .dark`, with StateKit's `$`
    model.$appearance.theme = .dark  // error: write it with `state.part ~> newValue`
    model.$appearance.fontScale += 0.1  // error: `state.part.modify { $0 += 1 }`

    // Misspelt members
    _ = model.$appearance.subscibe { print($0) }  // error: check the spelling; a container has value, modify, subscribe
    model.$fontScale.flsh()  // error: check the spelling; a container has value, modify, subscribe, observe, values, changes (and flush()
}
