//: # UserDefaultsState
//:
//: PLACEHOLDER — completed when the persistence work is merged (`UserDefaultsState` is not on this
//: branch yet). It will walk through the article's `isTouchIDEnabled` example: load an existing
//: value for the key, persist every change, remove the key when an `Optional` becomes `nil`.
import StateKit

print("UserDefaultsState: see the Persistence article until this page is completed.")
