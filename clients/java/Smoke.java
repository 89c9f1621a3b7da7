import com.example.atelier.client.ApiClient;
import com.example.atelier.client.ApiException;
import com.example.atelier.client.api.AccountApi;
import com.example.atelier.client.api.DevicesApi;
import com.example.atelier.client.api.PublicApi;
import com.example.atelier.client.model.DeviceRequest;
import com.example.atelier.client.model.DeviceView;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What an Android app does first, through the generated client: the packs, registering for
 * push, the balance, and a refused registration read as a problem. Prints one JSON object.
 * Usage: java Smoke BASE_URL BEARER_TOKEN DEVICE_ID
 */
public final class Smoke {
  public static void main(String[] args) throws Exception {
    ApiClient client = new ApiClient();
    client.updateBaseUri(args[0]);
    String bearer = "Bearer " + args[1];
    client.setRequestInterceptor(r -> r.header("Authorization", bearer));
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("packs", new PublicApi(client).listPacks().getItems().stream()
        .map(p -> p.getId()).collect(Collectors.toList()));
    DevicesApi devices = new DevicesApi(client);
    DeviceView put = devices.putDevice(args[2],
        new DeviceRequest().platform("android").token("fcm-token-from-java"));
    out.put("registered", put.getId());
    out.put("devices", devices.listDevices().getItems().stream()
        .map(d -> d.getId() + ":" + d.getPlatform()).collect(Collectors.toList()));
    out.put("balance", new AccountApi(client).getAccount().getBalance());
    try {
      devices.putDevice(args[2], new DeviceRequest().platform("windows").token("x"));
      out.put("refused", null);
    } catch (ApiException e) {
      Map<?, ?> problem = new ObjectMapper().readValue(e.getResponseBody(), Map.class);
      out.put("refused", e.getCode() + " " + problem.get("code"));
    }
    System.out.println(new ObjectMapper().writeValueAsString(out));
  }
}
