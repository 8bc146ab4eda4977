// ARX's anonymizer on the cases of benchmarks/anonymize_arx.py, timed in one warm JVM.
//
// Each line of the case file (tab-separated): name, data CSV (';'), quasi-identifiers as
// name=hierarchy.csv joined by ',', the sensitive attribute (or -), its hierarchy (or -),
// the models (k=5 and one of distinct=3, entropy=3, recursive=C:L, equal=T, ordered=T,
// hierarchical=T, joined by ','), the suppression limit, the algorithm (optimal or
// lightning), the time limit in ms (lightning), warm-up runs and timed runs.  Per case it
// prints one tab-separated line: name, median wall ms, min wall ms, median CPU ms, the
// optimum's transformation, its score (ARX's Precision, arithmetic mean) and the number of
// transformations ARX checked.
//
// Built against ARX (github.com/arx-deidentifier/arx), see benchmarks/peers/setup_arx.sh.

import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXConfiguration.AnonymizationAlgorithm;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataType;
import org.deidentifier.arx.criteria.DistinctLDiversity;
import org.deidentifier.arx.criteria.EntropyLDiversity;
import org.deidentifier.arx.criteria.EqualDistanceTCloseness;
import org.deidentifier.arx.criteria.HierarchicalDistanceTCloseness;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.OrderedDistanceTCloseness;
import org.deidentifier.arx.criteria.RecursiveCLDiversity;
import org.deidentifier.arx.metric.Metric;

public class ArxAnonymize {

    public static void main(String[] args) throws Exception {
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        for (String line : Files.readAllLines(new File(args[0]).toPath(), StandardCharsets.UTF_8)) {
            if (line.isBlank()) continue;
            String[] f = line.split("\t");
            int warm = Integer.parseInt(f[9]), runs = Integer.parseInt(f[10]);
            List<Double> wall = new ArrayList<>(), cpu = new ArrayList<>();
            String transformation = "", score = "";
            int checked = 0;
            for (int run = 0; run < warm + runs; run++) {
                Data data = Data.create(new File(f[1]), StandardCharsets.UTF_8, ';');
                ARXConfiguration config = configure(f, data);
                long started = System.nanoTime(), cpuStarted = bean.getCurrentThreadCpuTime();
                ARXResult result = new ARXAnonymizer().anonymize(data, config);
                long took = System.nanoTime() - started;
                long cpuTook = bean.getCurrentThreadCpuTime() - cpuStarted;
                if (run >= warm) {
                    wall.add(took / 1e6);
                    cpu.add(cpuTook / 1e6);
                }
                checked = 0;
                for (org.deidentifier.arx.ARXLattice.ARXNode[] level : result.getLattice().getLevels()) {
                    for (org.deidentifier.arx.ARXLattice.ARXNode node : level) {
                        if (node.isChecked()) checked++;
                    }
                }
                if (result.getGlobalOptimum() != null) {
                    transformation = Arrays.toString(result.getGlobalOptimum().getTransformation());
                    score = result.getGlobalOptimum().getLowestScore().toString();
                } else {
                    transformation = "none";
                }
                data.getHandle().release();
            }
            Collections.sort(wall);
            Collections.sort(cpu);
            System.out.println(String.join("\t", f[0], String.valueOf(wall.get(wall.size() / 2)),
                String.valueOf(wall.get(0)), String.valueOf(cpu.get(cpu.size() / 2)), transformation, score,
                String.valueOf(checked)));
            System.out.flush();
        }
    }

    static ARXConfiguration configure(String[] f, Data data) throws Exception {
        ARXConfiguration config = ARXConfiguration.create();
        for (String spec : f[2].split(",")) {
            String[] named = spec.split("=", 2);
            data.getDefinition().setAttributeType(named[0],
                Hierarchy.create(new File(named[1]), StandardCharsets.UTF_8, ';'));
        }
        String sensitive = f[3];
        Hierarchy sensitiveHierarchy = null;
        if (!sensitive.equals("-")) {
            data.getDefinition().setAttributeType(sensitive, AttributeType.SENSITIVE_ATTRIBUTE);
            data.getDefinition().setDataType(sensitive, DataType.INTEGER);
            if (!f[4].equals("-")) {
                sensitiveHierarchy = Hierarchy.create(new File(f[4]), StandardCharsets.UTF_8, ';');
            }
        }
        for (String model : f[5].split(",")) {
            String[] kv = model.split("=", 2);
            switch (kv[0]) {
                case "k": config.addPrivacyModel(new KAnonymity(Integer.parseInt(kv[1]))); break;
                case "distinct": config.addPrivacyModel(new DistinctLDiversity(sensitive, Integer.parseInt(kv[1]))); break;
                case "entropy": config.addPrivacyModel(new EntropyLDiversity(sensitive, Double.parseDouble(kv[1]))); break;
                case "recursive": {
                    String[] cl = kv[1].split(":");
                    config.addPrivacyModel(new RecursiveCLDiversity(sensitive, Double.parseDouble(cl[0]), Integer.parseInt(cl[1])));
                    break;
                }
                case "equal": config.addPrivacyModel(new EqualDistanceTCloseness(sensitive, Double.parseDouble(kv[1]))); break;
                case "ordered": config.addPrivacyModel(new OrderedDistanceTCloseness(sensitive, Double.parseDouble(kv[1]))); break;
                case "hierarchical": config.addPrivacyModel(new HierarchicalDistanceTCloseness(sensitive, Double.parseDouble(kv[1]), sensitiveHierarchy)); break;
                default: throw new IllegalArgumentException("unknown model " + kv[0]);
            }
        }
        config.setSuppressionLimit(Double.parseDouble(f[6]));
        config.setQualityModel(Metric.createPrecisionMetric());
        if (f[7].equals("lightning")) {
            config.setAlgorithm(AnonymizationAlgorithm.BEST_EFFORT_BOTTOM_UP);
            config.setHeuristicSearchTimeLimit(Integer.parseInt(f[8]));
        } else {
            config.setAlgorithm(AnonymizationAlgorithm.OPTIMAL);
            config.setHeuristicSearchThreshold(Integer.MAX_VALUE);
        }
        return config;
    }
}
