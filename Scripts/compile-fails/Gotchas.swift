// Mistakes the compiler cannot be steered on: each error is quoted in Gotchas.md with its fix, and
// `// gotcha:` makes the check fail when the compiler's words change (see MonitoredState.swift).
import StateKit

enum Theme: String, Codable, Equatable, Sendable { case light, dark }

struct Appearance: Codable, Equatable, Sendable {
    var theme = Theme.light
    var fontScale = 1.0
}

final class SettingsModel: @unchecked Sendable {
    @Stateful(key: "appearance") var appearance = Appearance()
    @Stateful(key: "isCompact") var isCompact = false
}

@MainActor
final class SettingsViewModel {
    let model = SettingsModel()
    var title = ""
    var subscription: Subscription?

    func start() {
        subscription = model.$appearance.subscribe { [weak self] in self?.title = "\($0.theme)" }  // gotcha: main actor-isolated property 'title' can not be mutated from a Sendable closure
    }
}

func gotchas(model: SettingsModel) {
    // `~>` has the standard library's DefaultPrecedence: a compound right-hand side needs parentheses.
    model.$appearance.fontScale ~> model.appearance.fontScale + 0.1  // gotcha: adjacent operators are in unordered precedence groups 'DefaultPrecedence' and 'AdditionPrecedence'

    // A subscribe handler is @Sendable: it cannot change a local var.
    var count = 0
    let counting = model.$appearance.subscribe { _ in count += 1 }  // gotcha: mutation of captured var 'count' in concurrently-executing code

    // `value` is read-only, on a container as on a projection.
    model.$isCompact.value = true  // gotcha: cannot assign to property: 'value' is a get-only property
    model.$appearance.theme.value = .dark  // gotcha: cannot assign to property: 'value' is a get-only property

    // A projection held in a variable is not its value.
    let isCompact = model.$isCompact.readOnly
    if isCompact == true {}  // gotcha: cannot convert value of type 'Observed<Bool>' to expected argument type 'Bool'

    // A storage factory spelt with the protocol's name instead of a leading dot.
    let storage = StateStorage.inMemory  // gotcha: static member 'inMemory' cannot be used on protocol metatype '(any StateStorage).Type'

    // A misspelt part followed by `~>`.
    model.$appearance.theem ~> .dark  // gotcha: cannot convert value of type 'UnknownMember<Appearance>' to expected argument type
    _ = counting
    _ = storage
}

func syncGotchas(profile: SyncedState<Appearance>) async throws {
    // refresh() pulls from a server, which can fail.
    await profile.refresh()  // gotcha: call can throw but is not marked with 'try'
}
