//: # UserDefaultsState
//:
//: The article's persisted container: it loads an existing value for its key on init, stores
//: every change, and removes the key when an `Optional` becomes `nil`. Pass your own
//: `UserDefaults` suite (the default is `.standard`) so experiments never touch real settings.
import Foundation
import StateKit

let suiteName = "StateKitPlayground-\(UUID().uuidString)"
let defaults = UserDefaults(suiteName: suiteName)!

//: The article's example: a value already in defaults is what the container starts with.
defaults.set(true, forKey: "isTouchIDEnabled")
let isTouchIDEnabled = UserDefaultsState(false, key: "isTouchIDEnabled", defaults: defaults)
print("isTouchIDEnabled loaded as", isTouchIDEnabled.value)  // true

isTouchIDEnabled ~> false
print("stored in defaults:", defaults.bool(forKey: "isTouchIDEnabled"))  // false

//: Optionals: `nil` removes the key, so other code reading defaults sees "not set".
let nickname = UserDefaultsState<String?>(nil, key: "nickname", defaults: defaults)
nickname ~> "Tim"
print("nickname in defaults:", defaults.string(forKey: "nickname") ?? "nil")
nickname ~> nil
print("nickname removed:", defaults.object(forKey: "nickname") == nil)

//: Any `Codable` value works too; it is stored as encoded data.
struct Preferences: Codable, Equatable, Sendable {
    var theme = "light"
    var fontSize = 14
}
let preferences = UserDefaultsState(Preferences(), key: "preferences", defaults: defaults)
preferences.modify { $0.theme = "dark" }
let reloaded = UserDefaultsState(Preferences(), key: "preferences", defaults: defaults)
print("a second container for the key loads:", reloaded.value.theme)  // dark

defaults.removePersistentDomain(forName: suiteName)
