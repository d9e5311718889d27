package bot

import "testing"

// The planner's readings of values files and the editor's verified edits
// are kept across cycles within the bot's budget: a cycle that plans the
// same files and observations again takes them from there.
func TestPlanReadingsAreKeptAcrossCycles(t *testing.T) {
	fx := newFixture(t, nil)
	// bob holds no role: the change is denied, so the head stays and the
	// next cycle plans the same files and observations.
	o := replicas(4, 0)
	o.Change.Actor, o.Change.Groups = "bob", nil
	fx.observe(o)
	fx.cycle()
	first := fx.bot.readings.Stats()
	if first.Entries == 0 || first.Misses == 0 {
		t.Fatalf("the first cycle's plan kept nothing: %+v", first)
	}
	fx.cycle()
	second := fx.bot.readings.Stats()
	if second.Hits <= first.Hits || second.Misses != first.Misses {
		t.Errorf("the second cycle read again what the first kept: %+v, then %+v", first, second)
	}
	if second.Bytes > PlanReadingsBudget {
		t.Errorf("the readings hold %d bytes, over the budget of %d", second.Bytes, PlanReadingsBudget)
	}
}
