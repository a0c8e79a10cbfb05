// `@Persisted` inside an `@Observable` class: the macro turns the property into a computed one
// with a backing `_count`, which the wrapper's own `_count` collides with (the error is in the macro's
// expansion; check.py reads it on the line the expansion came from). Alone in its file, since
// the compiler expands the macro only in a file with no other error; see Gotchas.md.
import Observation
import StateKit

@Observable final class HabitsModel {
    @Persisted(key: "count") var count = 0  // gotcha: invalid redeclaration of synthesized property '_count'
}
